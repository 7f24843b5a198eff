"""kill -9 in the middle of ``bench judged run``'s loop, then a rerun: the journal keeps every finished pair,
the rerun sends only the others and publishes the labels."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from bench.core.journal import Journal
from bench.judged.run import make_client, run_judge
from tests.support.messages_api import MessagesServer


def _judge_in_a_fork(prepared: Path, env: dict[str, str]) -> int:
    """``bench judged run``'s loop in a process of its own, forked from this one, which has imported anthropic
    already (a fresh ``python -c`` spent ~2 s CPU importing it again): its own pid, environment and output
    (devnull), killed with SIGKILL as any process is. The pid; the child never returns here."""
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__  # not pytest's capture
        os.environ.clear()
        os.environ.update(env)
        run_judge(prepared, client=make_client(timeout=60.0), sleep=lambda s: None)
        code = 0
    finally:
        os._exit(code)


@pytest.mark.slow
def test_kill_9_then_resume(prepared: Path) -> None:
    # heavy (2 s CPU): imported before the fork, so that the judge's process does not import it again
    import anthropic  # noqa: F401

    server = MessagesServer(script=[("answer", "1"), ("answer", "0"), ("stall", 20)])
    try:
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": server.url}
        pid = _judge_in_a_fork(prepared, env)
        journal = prepared / "journal.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(server.requests) < 3 and not os.waitpid(pid, os.WNOHANG)[0]:
            time.sleep(0.05)
        assert len(server.requests) == 3, "the subprocess did not reach the stalled third pair"
        os.kill(pid, signal.SIGKILL)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == -signal.SIGKILL
        assert len(journal.read_bytes().splitlines()) == 2  # pairs 1 and 2, fsynced before the kill
        sent_before = len(server.requests)
        os.environ["ANTHROPIC_API_KEY"] = "sk-test"
        try:
            counts = run_judge(
                prepared,
                client=make_client(base_url=server.url, timeout=5.0),
                publish_dir=prepared / "pub",
                sleep=lambda s: None,
            )
        finally:
            del os.environ["ANTHROPIC_API_KEY"]
    finally:
        server.close()
    assert counts["already_done"] == 2 and len(server.requests) - sent_before == counts["judged"]
    with Journal(journal) as j:
        recs = j.records
    assert [r["label"] for r in recs[:2]] == [1, 0] and [r["request_id"] for r in recs[:2]] == [
        "req_1",
        "req_2",
    ]
    labels = json.loads((prepared / "pub" / "labels.json").read_text())
    assert len(labels["pairs"]) == len(recs)
    sessions = json.loads((prepared / "run.json").read_text())["sessions"]
    assert (
        sessions[0]["status"] == "running" and sessions[-1]["status"] == "complete"
    )  # the killed one says so
