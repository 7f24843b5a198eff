"""No orphaned Typesense: the launcher's parent-death signal, the owner record and the
sweep of stale folders, and a harness killed by SIGKILL whose server stops itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from bench.firststage.launcher import EXIT_PARENT_GONE
from bench.firststage.launcher import main as launcher_main
from bench.firststage.server import local_typesense
from bench.firststage.stale import FORMAT, OWNER_FILE, PREFIX, is_alive, process_start, sweep_stale

ROOT = Path(__file__).resolve().parents[2]


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _folder(root: Path, name: str, record: dict[str, object] | None) -> Path:
    folder = root / name
    (folder / "data").mkdir(parents=True)
    (folder / "typesense.log").write_text("log\n")
    if record is not None:
        (folder / OWNER_FILE).write_text(json.dumps({"format": FORMAT, **record}))
    return folder


def wait_gone(pid: int, start: int | None, timeout: float = 120.0) -> bool:
    """Whether the process is gone: waits for that event; ``timeout`` only guards against a hang (far above
    what a loaded machine needs)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_alive(pid, start):
            return True
        time.sleep(0.05)
    return False


def test_process_start_tells_a_reused_pid_apart() -> None:
    me = process_start(os.getpid())
    assert isinstance(me, int) and me > 0
    assert is_alive(os.getpid(), me)
    assert not is_alive(os.getpid(), me + 1)  # same PID, other start time: not the recorded process
    assert not is_alive(_dead_pid(), me)
    assert not is_alive(None, me)


def test_sweep_removes_only_dead_folders_of_ours(tmp_path: Path) -> None:
    dead, me, me_start = _dead_pid(), os.getpid(), process_start(os.getpid())

    def rec(owner: int, owner_start: int | None, server: int, server_start: int | None) -> dict[str, object]:
        return {
            "owner_pid": owner,
            "owner_start": owner_start,
            "server_pid": server,
            "server_start": server_start,
        }

    stale = _folder(tmp_path, PREFIX + "stale", rec(dead, 1, dead, 1))
    reused = _folder(tmp_path, PREFIX + "reused", rec(me, (me_start or 0) + 7, dead, 1))
    live_owner = _folder(tmp_path, PREFIX + "live-owner", rec(me, me_start, dead, 1))
    live_server = _folder(tmp_path, PREFIX + "live-server", rec(dead, 1, me, me_start))
    unrecorded = _folder(tmp_path, PREFIX + "older-code", None)
    foreign = _folder(tmp_path, "someone-else", rec(dead, 1, dead, 1))
    torn = _folder(tmp_path, PREFIX + "torn", None)
    (torn / OWNER_FILE).write_text('{"format": "bench-typ')
    (tmp_path / (PREFIX + "wrapper.lock")).write_text("")  # a file with our prefix is never touched
    messages: list[str] = []
    removed = sweep_stale(tmp_path, log=messages.append)
    assert removed == sorted([stale, reused])
    assert not stale.exists() and not reused.exists()
    for kept in (live_owner, live_server, unrecorded, foreign, torn):
        assert (kept / "data").is_dir(), kept
    assert (tmp_path / (PREFIX + "wrapper.lock")).is_file()
    assert len(messages) == 2 and f"owner process {dead} and server process {dead} have ended" in messages[1]


def test_launcher_refuses_when_the_parent_is_already_gone() -> None:
    assert launcher_main([str(_dead_pid()), "/bin/true"]) == EXIT_PARENT_GONE
    assert launcher_main(["not-a-pid", "/bin/true"]) == 2


HARNESS = textwrap.dedent(
    """
    import os, subprocess, sys, time
    launcher = [sys.executable, "-m", "bench.firststage.launcher", str(os.getpid())]
    proc = subprocess.Popen(launcher + sys.argv[1:], start_new_session=True)
    print(proc.pid, flush=True)
    time.sleep(300)
    """
)
# a program that ignores SIGTERM stands in for a Typesense that swallowed it early in its start-up
IGNORES_SIGTERM = ["/bin/sh", "-c", "trap '' TERM; exec /bin/sleep 300"]


def _argv0(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()


@pytest.mark.parametrize(
    "program", [["/bin/sleep", "300"], IGNORES_SIGTERM], ids=["plain", "ignores-sigterm"]
)
def test_launched_child_dies_with_its_sigkilled_parent(program: list[str]) -> None:
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, *program], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert harness.stdout is not None
    child = int(harness.stdout.readline())
    deadline = time.monotonic() + 120  # a guard against a hang; the loop waits for the event
    # until the launcher (and the shell) have replaced themselves with the program: its own command line
    while _argv0(child) != "/bin/sleep" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _argv0(child) == "/bin/sleep"
    start = process_start(child)
    assert start is not None
    harness.kill()
    harness.wait()
    assert wait_gone(child, start), "the launched program outlived its SIGKILLed parent"


SERVER_HARNESS = textwrap.dedent(
    """
    import time
    from bench.firststage.server import local_typesense
    with local_typesense() as server:
        print(server.pid, flush=True)
        time.sleep(300)
    """
)


@pytest.mark.typesense
def test_sigkilled_harness_leaves_no_server_and_the_next_start_sweeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    harness = subprocess.Popen(
        [sys.executable, "-c", SERVER_HARNESS], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    assert harness.stdout is not None
    line = harness.stdout.readline()
    assert line, "the harness did not start a server"
    pid = int(line)
    start = process_start(pid)
    assert start is not None and "typesense-server" in Path(f"/proc/{pid}/cmdline").read_text()
    folders = [p for p in tmp.iterdir() if p.is_dir() and p.name.startswith(PREFIX)]
    assert len(folders) == 1 and (folders[0] / OWNER_FILE).is_file()
    harness.send_signal(signal.SIGKILL)
    harness.wait()
    assert wait_gone(pid, start), "typesense-server outlived its SIGKILLed harness"
    assert folders[0].is_dir()  # SIGKILL left the folder behind ...
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    with local_typesense():  # ... and the next start removes it
        assert not folders[0].exists()
        assert len([p for p in tmp.iterdir() if p.is_dir()]) == 1  # its own folder
