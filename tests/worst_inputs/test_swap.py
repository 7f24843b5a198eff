"""``analysis report`` replaces its report whole or not at all (issue 41, item 1).

As the reviewer found it: a real signal (SIGINT, SIGTERM, SIGKILL) sent at every rename of the swap, before
and after it (``seam.py`` counts them), and a failed rename; after each, ``--out`` holds the complete old
report or the complete new one (byte for byte), and the next run leaves nothing behind. Two reports at once
into one ``--out``: the second refuses with one line (the lock), never a mix.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.atomic import out_lock
from analysis.report import write_report
from tests.worst_inputs.conftest import env, one_line

SEAM = Path(__file__).with_name("seam.py")
RENAMES = 4  # quality/ and report.md (--no-figures), each: the old one to the trash, the new one in


def snapshot(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def versions(study: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    """The complete report A (qrels.tsv) and B (qrels-b.tsv: one label changed), each written alone."""
    lines = (study / "qrels.tsv").read_text().splitlines(keepends=True)
    q, it, d, label = lines[0].split()
    lines[0] = f"{q} {it} {d} {1 - int(label)}\n"
    (study / "qrels-b.tsv").write_text("".join(lines))
    refs = tmp_path_factory.mktemp("refs")
    out = {}
    for name, qrels in (("A", "qrels.tsv"), ("B", "qrels-b.tsv")):
        write_report(study / "runs", study / qrels, refs / name, title=f"report {name}", figures=False)
        out[name] = snapshot(refs / name)
    assert out["A"] != out["B"] and out["A"]["quality/study.json"] != out["B"]["quality/study.json"]
    return out


def report_args(study: Path, out: Path, which: str) -> list[str]:
    qrels = "qrels.tsv" if which == "A" else "qrels-b.tsv"
    return ["report", "--runs", str(study / "runs"), "--qrels", str(study / qrels), "--out", str(out),
            "--no-figures", "--title", f"report {which}"]  # fmt: skip


def seam(n: int, action: str, when: str, folder: Path, args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(SEAM), str(n), action, when, str(folder), *args],
                            env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


SIGNALS = ("SIGINT", "SIGTERM", "SIGKILL")
CASES = [(sig, n, "before") for sig in (*SIGNALS, "oserror") for n in range(1, RENAMES + 1)]
CASES += [(sig, RENAMES, "after") for sig in SIGNALS]


@pytest.mark.parametrize(("action", "n", "when"), CASES)
def test_a_signal_at_any_rename_leaves_a_whole_report(study: Path, versions: dict[str, dict[str, bytes]],
                                                      tmp_path: Path, action: str, n: int, when: str) -> None:
    out = tmp_path / "out"
    for name, data in versions["A"].items():  # the earlier report
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
    proc = seam(n, action, when, tmp_path, report_args(study, out, "B"))
    _, stderr = proc.communicate(timeout=300)
    assert "Traceback" not in stderr, stderr
    if action == "SIGKILL":
        assert proc.returncode == -signal.SIGKILL, stderr
    elif action == "oserror":
        assert proc.returncode == 1, stderr
        assert "Input/output error (injected)" in stderr and "the earlier report" in stderr, stderr
    else:
        assert proc.returncode == 128 + getattr(signal, action), stderr
        assert f"Error: interrupted by {action}" in stderr, stderr
    if action != "SIGKILL":  # the seam was reached; a signal waits for the swap to finish
        done = int(stderr.rsplit("renames ", 1)[1])
        # a signal: the whole swap; a failed rename: it, then each one done before it undone
        assert done == (RENAMES if action.startswith("SIG") else n + n - 1), stderr
    now = snapshot(out)
    if action == "SIGKILL" and now not in (versions["A"], versions["B"]):
        # killed between two renames (no signal can be caught): the journal beside --out says how to put the
        # earlier report back; any later writer does so under the lock before anything else
        assert (tmp_path / ".out.swap").is_file()
        with out_lock(out) as said:
            assert any("put back" in line for line in said), said
        now = snapshot(out)
        assert now == versions["A"]
    assert now in (versions["A"], versions["B"]), sorted(now)
    if action == "oserror":
        assert now == versions["A"]
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != "out")
    if action != "SIGKILL":  # the process cleaned up after itself
        assert left == [], left
    # the next run: cleans what was left (and says what it removed or put back), then writes B
    nxt = subprocess.run([sys.executable, "-m", "analysis.cli", *report_args(study, out, "B")], env=env(),
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert nxt.returncode == 0, nxt.stderr
    assert snapshot(out) == versions["B"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    for name in left:  # each leftover named
        if not name.endswith(".lock"):
            assert name in nxt.stderr, nxt.stderr


def test_two_reports_at_once_never_mix(study: Path, versions: dict[str, dict[str, bytes]],
                                       tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = seam(1, "pause", "before", tmp_path, report_args(study, out, "A"))
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "paused").exists():  # A holds the lock and stands inside its swap
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.05)
        second = subprocess.run([sys.executable, "-m", "analysis.cli", *report_args(study, out, "B")],
                                env=env(), capture_output=True, text=True, timeout=300)  # fmt: skip
        line = one_line(second, str(out), "another analysis report", f"pid {first.pid}", "Fix:")
        assert "wait for it to finish" in line
    finally:
        (tmp_path / "go").write_text("")
    assert first.wait(timeout=300) == 0, first.communicate()
    assert snapshot(out) == versions["A"]


def test_two_reports_started_together(study: Path, versions: dict[str, dict[str, bytes]],
                                      tmp_path: Path) -> None:
    """No pause: whichever takes the lock first writes; the other refuses or (having started after the first
    finished) writes its own whole report; never a mix."""
    for round_ in range(3):
        out = tmp_path / f"out{round_}"
        procs = {w: subprocess.Popen([sys.executable, "-m", "analysis.cli", *report_args(study, out, w)],
                                     env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for w in "AB"}  # fmt: skip
        results = {w: (p.wait(timeout=300), p.communicate()[1]) for w, p in procs.items()}
        for rc, err in results.values():
            assert rc in (0, 1) and "Traceback" not in err, err
            assert rc == 0 or "another analysis report" in err, err
        assert any(rc == 0 for rc, _ in results.values())
        assert snapshot(out) in (versions["A"], versions["B"])
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(f".out{round_}.")) == []
