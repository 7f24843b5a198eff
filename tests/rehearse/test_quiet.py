"""A rehearsal keeps the transformers load report off the terminal and in its libraries.log (issue 9 item
15). Run as its own process: the report is printed once per model load, and an in-process model cache of
another test would hide it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.typesense, pytest.mark.model, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def test_load_report_is_in_the_log_not_on_the_terminal(
    tmp_path: Path, mini_beir: Path, shared_cache: Path
) -> None:
    out = tmp_path / "reh"
    env = {**os.environ, "BENCH_CACHE_DIR": str(shared_cache)}
    cmd = [sys.executable, "-m", "bench.cli", "rehearse", "--dataset", str(mini_beir), "--max-queries", "2",
           "--out", str(out)]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=850)
    assert done.returncode == 0, done.stderr
    assert "LOAD REPORT" not in done.stderr + done.stdout
    assert "Loading weights" not in done.stderr  # transformers' progress bar is off as well
    log = (out / "libraries.log").read_text(encoding="utf-8")
    assert "BertModel LOAD REPORT" in log and "UNEXPECTED" in log
    assert "rehearse: " in done.stderr  # the command's own diagnostics still reach the terminal
