"""SIGKILL and SIGHUP to a running `bench rehearse` leave no typesense-server of that run (issue 9 item 17).

Each rehearsal gets its own TMPDIR, so its server (data folder in the command line) is told apart from
the servers other tests run at the same time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.typesense, pytest.mark.model]
ROOT = Path(__file__).resolve().parents[2]


def servers_under(folder: Path) -> list[int]:
    """PIDs of live typesense-server processes whose command line names ``folder``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if "typesense-server" in cmdline and str(folder) in cmdline and state not in ("Z", "X"):
            found.append(int(proc.name))
    return found


def _start(tmp_path: Path, mini_beir: Path, shared_cache: Path) -> tuple[subprocess.Popen[bytes], Path, Path]:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "reh"
    env = {**os.environ, "BENCH_CACHE_DIR": str(shared_cache), "TMPDIR": str(tmp)}
    cmd = [sys.executable, "-m", "bench.cli", "rehearse", "--dataset", str(mini_beir), "--out", str(out)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not servers_under(tmp) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert servers_under(tmp), "the rehearsal never started its Typesense server"
    return proc, tmp, out


def _wait_no_server(tmp: Path, timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while servers_under(tmp) and time.monotonic() < deadline:
        time.sleep(0.1)
    return servers_under(tmp)


def test_sigkill_leaves_no_server(tmp_path: Path, mini_beir: Path, shared_cache: Path) -> None:
    proc, tmp, _ = _start(tmp_path, mini_beir, shared_cache)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert _wait_no_server(tmp) == []


def test_sighup_ends_like_sigterm_and_stops_the_server(
    tmp_path: Path, mini_beir: Path, shared_cache: Path
) -> None:
    proc, tmp, out = _start(tmp_path, mini_beir, shared_cache)
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err.decode()
    assert b"rehearsal interrupted" in err and b"--resume" in err
    assert _wait_no_server(tmp, timeout=5.0) == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sessions"][-1]["status"] == "interrupted"
    assert [p for p in tmp.iterdir() if p.is_dir()] == []  # the folder was removed on the way out
