"""kill -9 in the middle of a block leaves nothing; the rerun measures the block again from its warm-up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from analysis.latency import read_blocks
from bench.latency.callers import RerankerCaller
from bench.latency.harness import run_block
from bench.latency.timer import WallTimer
from tests.latency.fakes import env, ordered_fake, spec

REPO = Path(__file__).resolve().parents[2]


def test_sigkill_mid_block_then_rerun(tmp_path: Path) -> None:
    out, marker = tmp_path / "latency", tmp_path / "marker"
    proc = subprocess.Popen([sys.executable, "-m", "tests.latency.killable", str(out), str(marker)], cwd=REPO)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, "the child ended before it was killed"
            assert time.monotonic() < deadline, "the child never reached its 5th call"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
    assert [p for p in out.rglob("*") if p.is_file()] == []  # no block, no half-written file
    fresh = ordered_fake()
    block, measured = run_block(spec(measured=200), RerankerCaller(fresh, WallTimer()), env(out))
    assert measured and len(fresh.calls) == 2 + 200 and len(block.samples) == 200
    assert [b.target for b in read_blocks(out)] == ["fake"]
