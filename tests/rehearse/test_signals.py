"""SIGKILL and SIGHUP to a running `bench rehearse` leave no typesense-server of that run.

Each rehearsal gets its own TMPDIR, so its server (data folder in the command line) is told apart from
the servers other tests run at the same time. The rehearsals use the cache of the session's shared run
(``rehearsal`` fixture), so their server starts without a quantisation first; the tests wait for that server
(an event), not for a time."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.rehearsal import ROOT, Rehearsal, servers_under, wait_for_server

# the shared run is made inside the first test that asks for it: up to a whole rehearsal on a loaded machine
pytestmark = [pytest.mark.typesense, pytest.mark.model, pytest.mark.timeout(1800)]


def _start(
    tmp_path: Path, mini_beir: Path, rehearsal: Rehearsal
) -> tuple[subprocess.Popen[bytes], Path, Path]:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "reh"
    cmd = rehearsal.command("--dataset", str(mini_beir), "--out", str(out))
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=rehearsal.env(TMPDIR=str(tmp)), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    wait_for_server(proc, tmp)
    return proc, tmp, out


def _wait_no_server(tmp: Path, timeout: float = 120.0) -> list[int]:
    """The servers still running under ``tmp`` once none is left, or after ``timeout`` (a guard against a
    hang, far above what a loaded machine needs; the test waits for the event, not for the time)."""
    deadline = time.monotonic() + timeout
    while servers_under(tmp) and time.monotonic() < deadline:
        time.sleep(0.1)
    return servers_under(tmp)


def test_sigkill_leaves_no_server(tmp_path: Path, mini_beir: Path, rehearsal: Rehearsal) -> None:
    proc, tmp, _ = _start(tmp_path, mini_beir, rehearsal)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=600)
    assert proc.returncode == -signal.SIGKILL
    assert _wait_no_server(tmp) == []


def test_sighup_ends_like_sigterm_and_stops_the_server(
    tmp_path: Path, mini_beir: Path, rehearsal: Rehearsal
) -> None:
    proc, tmp, out = _start(tmp_path, mini_beir, rehearsal)
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 130, err.decode()
    assert b"rehearsal interrupted" in err and b"--resume" in err
    assert _wait_no_server(tmp) == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sessions"][-1]["status"] == "interrupted"
    assert [p for p in tmp.iterdir() if p.is_dir()] == []  # the folder was removed on the way out
