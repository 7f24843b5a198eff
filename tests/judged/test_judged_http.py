"""The judge through the real ``anthropic`` client against a loopback Messages API server: answers,
malformed answers, 429 with retry-after, 529, 500, a stalled connection, an unknown model, a missing key;
journal resume without replay; the key written nowhere. Loops are bounded (scripted steps, a stall that ends
when the client gives up, no real sleeping)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from bench.core.errors import BenchError
from bench.core.journal import Journal
from bench.core.plan import JUDGE_MODEL
from bench.integrity.hashing import sha256_file
from bench.judged.judge import HTTP_ATTEMPTS, MAX_TOKENS, PARSE_ATTEMPTS, THINKING, JudgeStopped, backoff_s
from bench.judged.run import PROMPT_PATH, make_client, run_judge
from tests.support.messages_api import MessagesServer

KEY = "sk-ant-test-0123456789-never-written"
CLIENT_TIMEOUT_S = 5.0


@pytest.fixture
def client(server: MessagesServer, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    # far above a loaded machine's answer time (a 0.5 s limit timed out plain answers in CI); the stall below
    # lasts until the client gives up, so it costs this limit once
    return make_client(base_url=server.url, timeout=CLIENT_TIMEOUT_S)


class _StallTimesOutSoon(httpx2.HTTPTransport):
    """The anthropic client's own transport; a request the server's script will stall on gets a 0.3 s read
    timeout instead of the client's 5 s (requests that are answered keep the 5 s)."""

    def __init__(self, server: MessagesServer) -> None:
        super().__init__()
        self.server = server

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if self.server.script and self.server.script[0][0] == "stall":  # requests go one at a time
            request.extensions["timeout"] = {**request.extensions["timeout"], "read": 0.3}
        return super().handle_request(request)


def stalls_time_out_soon(server: MessagesServer) -> Any:
    import anthropic

    return anthropic.DefaultHttpxClient(transport=_StallTimesOutSoon(server))


def run(prepared: Path, client: Any, waits: list[float] | None = None, **kw: Any) -> dict[str, Any]:
    sink = waits if waits is not None else []
    return run_judge(
        prepared, client=client, publish_dir=prepared.parent / "published", sleep=sink.append, **kw
    )


def journal(prepared: Path) -> list[dict[str, Any]]:
    with Journal(prepared / "journal.jsonl") as j:
        return j.records


def test_every_pair_gets_a_fresh_conversation_and_the_fixed_settings(
    prepared: Path, server: MessagesServer, client: Any
) -> None:
    n = len(json.loads((prepared / "packet.json").read_text())["pairs"])
    server.script = [("answer", "1"), ("answer", "0"), ("answer", " unclear\n")]
    counts = run(prepared, client)
    assert counts["judged"] == n and counts["already_done"] == 0 and counts["unclear"] == 1
    assert len(server.requests) == n
    packet = json.loads((prepared / "packet.json").read_text())["pairs"]
    for req, item in zip(server.requests, packet, strict=True):
        body = req["body"]
        assert body["model"] == JUDGE_MODEL and body["max_tokens"] == MAX_TOKENS
        assert body["thinking"] == THINKING == {"type": "disabled"} and "temperature" not in body
        assert len(body["messages"]) == 1 and body["messages"][0]["role"] == "user"  # no earlier pairs
        content = body["messages"][0]["content"]
        assert item["query"] in content and item["passage"] in content and "{{" not in content
        auth = req["headers"].get("x-api-key", "") + req["headers"].get("authorization", "")
        assert KEY in auth  # the key travels only in the request headers
    recs = journal(prepared)
    assert [r["label"] for r in recs[:3]] == [1, 0, "unclear"]
    assert (
        recs[0]["request_id"] == "req_1" and recs[0]["input_tokens"] == 101 and recs[0]["output_tokens"] == 1
    )
    assert recs[0]["prompt_sha256"] == sha256_file(PROMPT_PATH) == recs[0]["qid"]
    labels = json.loads((prepared.parent / "published" / "labels.json").read_text())
    assert labels["judge_model"] == JUDGE_MODEL and len(labels["pairs"]) == n
    assert {"pair", "qid", "docid", "groups", "miracl_label", "label", "parse_failure"} == set(
        labels["pairs"][0]
    )
    text = (prepared.parent / "published" / "labels.json").read_text()
    assert "Frage" not in text and "Titel" not in text  # no texts published


def test_malformed_answers_are_retried_and_counted_apart(
    prepared: Path, server: MessagesServer, client: Any
) -> None:
    server.script = [("answer", "Yes, 1."), ("answer", "1"), *[("answer", "relevant")] * PARSE_ATTEMPTS]
    counts = run(prepared, client)
    recs = journal(prepared)
    assert recs[0]["label"] == 1 and [a["outcome"] for a in recs[0]["attempts"]] == ["malformed", "answer"]
    assert recs[0]["attempts"][0]["answer"] == "Yes, 1." and recs[0]["billed_input_tokens"] == 101 + 102
    assert recs[1]["status"] == "parse-failure" and recs[1]["label"] is None
    assert len(recs[1]["attempts"]) == PARSE_ATTEMPTS
    assert counts["parse_failures"] == 1 and counts["unclear"] == 0
    labels = json.loads((prepared.parent / "published" / "labels.json").read_text())
    pair2 = next(p for p in labels["pairs"] if p["pair"] == 2)
    assert pair2["label"] is None and pair2["parse_failure"] is True


def test_429_529_500_and_a_stall_are_retried_with_backoff_recorded(
    prepared: Path, server: MessagesServer, client: Any
) -> None:
    server.script = [
        ("status", 429, {"retry-after": "7"}),
        ("status", 529),
        ("status", 500),
        ("stall", 120),  # until the client's read timeout closes the connection (120 s: a hang guard only)
        ("answer", "0"),
    ]
    waits: list[float] = []
    run(prepared, client.with_options(http_client=stalls_time_out_soon(server)), waits)
    rec = journal(prepared)[0]
    outcomes = [(a["outcome"], a["http_status"]) for a in rec["attempts"]]
    assert outcomes == [
        ("http-error", 429),
        ("http-error", 529),
        ("http-error", 500),
        ("timeout", None),
        ("answer", 200),
    ]
    assert rec["attempts"][0]["retry_after_s"] == 7.0 and rec["attempts"][0]["request_id"] == "req_err_1"
    assert waits == [7.0, backoff_s(2, None), backoff_s(3, None), backoff_s(4, None)]
    assert [a["wait_s"] for a in rec["attempts"]] == [*waits, None]
    assert (
        rec["label"] == 0 and rec["request_id"] == f"req_{len(server.requests) - len(journal(prepared)) + 1}"
    )
    attempts = [json.loads(x) for x in (prepared / "attempts.jsonl").read_text().splitlines()]
    assert len(attempts) == 5 + len(journal(prepared)) - 1


def test_retries_run_out_then_a_rerun_resumes_without_replaying(
    prepared: Path, server: MessagesServer, client: Any
) -> None:
    server.script = [("answer", "1"), *[("status", 529)] * HTTP_ATTEMPTS]
    with pytest.raises(JudgeStopped, match=f"pair 2: {HTTP_ATTEMPTS} attempts failed"):
        run(prepared, client)
    recs = journal(prepared)
    assert len(recs) == 1 and recs[0]["pair"] == 1
    run_json = json.loads((prepared / "run.json").read_text())
    assert run_json["sessions"][-1]["status"] == "failed"
    assert not (prepared.parent / "published").exists()
    before = len(server.requests)
    counts = run(prepared, client)
    assert counts["already_done"] == 1 and len(server.requests) - before == counts["judged"]
    recs = journal(prepared)
    assert recs[0]["request_id"] == "req_1"  # the stored answer stays, with its own tokens and id
    assert all(r["body"]["messages"][0]["content"] for r in server.requests)
    again = run(prepared, client)
    assert again["judged"] == 0 and len(server.requests) - before == counts["judged"]  # nothing sent
    assert json.loads((prepared / "run.json").read_text())["sessions"][-1]["status"] == "complete"


def test_unknown_model_and_rejected_key_stop_with_one_line(
    prepared: Path, server: MessagesServer, client: Any
) -> None:
    server.script = [("status", 404)]
    with pytest.raises(JudgeStopped, match="does not know model 'claude-opus-5-5'") as info:
        run(prepared, client)
    assert "\n" not in str(info.value.message)
    server.script = [("status", 401)]
    with pytest.raises(JudgeStopped, match="refused the key"):
        run(prepared, client)
    assert journal(prepared) == []
    with pytest.raises(BenchError, match="unknown judge model 'gpt-x'"):
        run(prepared, client, model="gpt-x")


def test_missing_key_is_refused_and_the_key_is_written_nowhere(
    prepared: Path, server: MessagesServer, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(prepared, client)
    for path in [*prepared.rglob("*"), *(prepared.parent / "published").rglob("*")]:
        if path.is_file():
            assert KEY not in path.read_text(encoding="utf-8", errors="replace"), path
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(BenchError, match="ANTHROPIC_API_KEY is not set"):
        make_client(base_url=server.url)


def test_a_changed_prompt_starts_its_own_records(
    prepared: Path, server: MessagesServer, client: Any, tmp_path: Path
) -> None:
    run(prepared, client)
    n = len(journal(prepared))
    other = tmp_path / "prompt.txt"
    other.write_text(PROMPT_PATH.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    with pytest.raises(BenchError, match="holds other labels"):
        run(prepared, client, prompt_path=other)  # judged, but never published over the first labels
    assert len(journal(prepared)) == 2 * n
    counts = run_judge(
        prepared, client=client, prompt_path=other, publish_dir=tmp_path / "other", sleep=print
    )
    assert counts["judged"] == 0 and counts["already_done"] == n
    bad = tmp_path / "bad.txt"
    bad.write_text("no placeholders", encoding="utf-8")
    with pytest.raises(BenchError, match="needs"):
        run(prepared, client, prompt_path=bad)
