"""SIGKILL at random points, then resume: the study ends byte-identical to an uninterrupted one.

"Byte-identical" here: every run file (and the frozen candidates) byte for byte; the journal record for
record, in the same order, with the timing fields (``latency_ns``, ``utc``) removed. SIGTERM and Ctrl-C
end with exit code 130, a message saying how to resume, and a session marked ``interrupted``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path

from bench.core.journal import Journal
from bench.quality.phase import strip_timing
from bench.quality.study import KILLED
from tests.quality import killable
from tests.support.forked import Forked

UNITS = 2 * 6 * (1 + 3)  # stages x queries x (pointwise at 100 + listwise at 20/50/100)


def _start(tmp: Path, name: str, delay: float) -> Forked:
    """``python -m tests.quality.killable IN STUDY RUNS DELAY`` forked from the test's process, which has
    imported bench's quality phase already (a fresh interpreter spent ~0.5 s CPU on imports at each of the
    dozen starts); stderr on a pipe."""
    argv = [str(tmp / "in"), str(tmp / name / "study"), str(tmp / name / "runs"), str(delay)]
    return Forked(lambda: killable.main(argv), stderr=True)


def _journal_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _compare(a: Path, b: Path) -> None:
    files_a = sorted(p.relative_to(a) for p in (a / "runs").rglob("*.trec"))
    files_b = sorted(p.relative_to(b) for p in (b / "runs").rglob("*.trec"))
    assert files_a == files_b and len(files_a) == 2 * 2 * 3
    for rel in files_a:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    for name in sorted(p.name for p in (a / "study" / "candidates").iterdir()):
        ca, cb = a / "study" / "candidates" / name, b / "study" / "candidates" / name
        assert ca.read_bytes() == cb.read_bytes()
    with Journal(a / "study" / "journal.jsonl") as ja, Journal(b / "study" / "journal.jsonl") as jb:
        assert len(ja) == UNITS
        assert [strip_timing(r) for r in ja] == [strip_timing(r) for r in jb]


def test_sigkill_at_random_points_then_resume_is_byte_identical(tmp_path: Path) -> None:
    ref = _start(tmp_path, "ref", 0.0)
    assert ref.wait(120) == 0, ref.stderr.read().decode() if ref.stderr else ""
    rng = random.Random(20261009)
    kills = 0
    for _ in range(12):  # bounded: each attempt makes progress or finishes
        proc = _start(tmp_path, "killed", 0.02)
        journal = tmp_path / "killed" / "study" / "journal.jsonl"
        before = _journal_lines(journal)
        # kill after a random number of new records plus a random fraction of a call: mid-phase, mid-call
        target = before + rng.randint(1, 8)
        deadline = time.monotonic() + 60
        while _journal_lines(journal) < target and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.002)
        time.sleep(rng.uniform(0.0, 0.03))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
            kills += 1
            # half of the kills also tear the last line, as a crash during write() would
            if kills % 2 == 0 and journal.exists() and journal.stat().st_size:
                with journal.open("ab") as fh:
                    fh.write(b'{"stage":"s1","model":"point","dep')
            continue
        assert proc.returncode == 0, proc.stderr.read().decode() if proc.stderr else ""
        assert _journal_lines(journal) >= before
        break
    else:
        final = _start(tmp_path, "killed", 0.0)
        assert final.wait(120) == 0
    assert kills >= 2
    _compare(tmp_path / "ref", tmp_path / "killed")
    manifest = json.loads((tmp_path / "killed" / "study" / "manifest.json").read_text())
    statuses = [s["status"] for s in manifest["sessions"]]
    # every SIGKILLed session is marked by the next start; none stays "running" forever
    assert statuses[-1] == "complete" and "running" not in statuses
    assert statuses.count(KILLED) == kills
    killed = [s for s in manifest["sessions"] if s["status"] == KILLED]
    assert all(s["ended_utc"] is None and s["marked_utc"] for s in killed)


def test_sigterm_ends_cleanly_and_resumes(tmp_path: Path) -> None:
    proc = _start(tmp_path, "t", 0.05)
    journal = tmp_path / "t" / "study" / "journal.jsonl"
    deadline = time.monotonic() + 60
    while _journal_lines(journal) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert b"interrupted" in err and b"Resume with" in err
    manifest = json.loads((tmp_path / "t" / "study" / "manifest.json").read_text())
    assert manifest["sessions"][-1]["status"] == "interrupted"
    with Journal(journal) as j:  # valid, no torn line, and resumable
        done = len(j)
        assert j.dropped_torn_line is None and 3 <= done < UNITS
    again = _start(tmp_path, "t", 0.0)
    assert again.wait(120) == 0
    with Journal(journal) as j:
        assert len(j) == UNITS
    os.sync()
