"""kill -9 in the middle of ``bench judged run``'s loop, then a rerun: the journal keeps every finished pair,
the rerun sends only the others and publishes the labels."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from bench.core.journal import Journal
from bench.judged.run import make_client, run_judge
from tests.support.forked import Forked
from tests.support.messages_api import MessagesServer


def _judge(prepared: Path) -> int:
    """``bench judged run``'s loop, as the killed process runs it."""
    run_judge(prepared, client=make_client(timeout=60.0), sleep=lambda s: None)
    return 0


@pytest.mark.slow
def test_kill_9_then_resume(prepared: Path) -> None:
    # heavy (2 s CPU): imported before the fork, so that the judge's process does not import it again
    import anthropic  # noqa: F401

    server = MessagesServer(script=[("answer", "1"), ("answer", "0"), ("stall", 20)])
    try:
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": server.url}
        proc = Forked(lambda: _judge(prepared), env=env)  # anthropic imported above
        journal = prepared / "journal.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(server.requests) < 3 and proc.poll() is None:
            time.sleep(0.05)
        assert len(server.requests) == 3, "the subprocess did not reach the stalled third pair"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL
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
