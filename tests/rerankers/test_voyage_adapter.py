"""The Voyage adapter against the loopback Voyage rerank endpoint (``tests.support.voyage_api``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from bench.core.errors import BenchError
from bench.rerankers.protocol import Reranker
from bench.rerankers.voyage import VoyageError, VoyageReranker, read_api_key
from tests.support.voyage_api import FakeVoyage, Reply

KEY = "pa-TESTKEY-0123456789abcdef"


@pytest.fixture
def fake() -> Iterator[FakeVoyage]:
    with FakeVoyage() as server:  # HTTP/1.1 keep-alive: a persistent client connection is visible
        yield server


def make(fake: FakeVoyage, sleeps: list[float] | None = None, **kw: Any) -> VoyageReranker:
    waits = sleeps if sleeps is not None else []
    return VoyageReranker(
        "voyage-rerank-3",
        api_key=KEY,
        base_url=fake.url,
        sleep=waits.append,
        timeout_s=kw.pop("timeout_s", 5.0),
        **kw,
    )


DOCS = ["kurz", "ein etwas längerer Text", "mittel lang", "x" * 50]


def test_request_shape_and_scores_in_first_stage_order(fake: FakeVoyage) -> None:
    with make(fake) as r:
        assert isinstance(r, Reranker)
        res = r.score("Frage?", DOCS)
    assert res.scores.dtype == np.float32
    assert res.scores.tolist() == pytest.approx([len(d) / 100.0 for d in DOCS])
    req = fake.requests[0]
    assert req["path"] == "/v1/rerank"
    assert req["auth"] == f"Bearer {KEY}"
    assert req["json"] == {
        "model": "rerank-3",
        "query": "Frage?",
        "documents": DOCS,
        "truncation": True,
        "return_documents": False,
    }
    call = r.calls[0]
    assert call["billed_tokens"] == sum(len(d.split()) + 1 for d in DOCS)
    assert [a["status"] for a in call["attempts"]] == [200]
    assert call["attempts"][0]["duration_s"] > 0
    assert r.meta.extra["measurement_date"] == call["measurement_date"]
    assert r.meta.device == "api" and r.meta.revision is None


def test_lite_model_and_top_k(fake: FakeVoyage) -> None:
    with VoyageReranker("voyage-rerank-3-lite", api_key=KEY, base_url=fake.url, sleep=lambda s: None) as r:
        r.score("q", DOCS, top_k=4)
    assert fake.requests[0]["json"]["model"] == "rerank-3-lite"
    assert fake.requests[0]["json"]["top_k"] == 4


def test_persistent_connection(fake: FakeVoyage) -> None:
    with make(fake) as r:
        for _ in range(3):
            r.score("q", DOCS)
    assert len({req["client_port"] for req in fake.requests}) == 1


def test_429_retry_after_is_honoured_and_recorded(fake: FakeVoyage) -> None:
    fake.script = [Reply(429, b'{"detail":"rate limited"}', {"Retry-After": "7"}), Reply()]
    waits: list[float] = []
    with make(fake, waits) as r:
        res = r.score("q", DOCS)
    assert waits == [7.0]
    attempts = r.calls[0]["attempts"]
    assert [a["status"] for a in attempts] == [429, 200]
    assert attempts[0]["retry_after_s"] == 7.0 and attempts[0]["waited_s"] == 7.0
    assert len(res.scores) == len(DOCS)


def test_5xx_backoff_then_success(fake: FakeVoyage) -> None:
    fake.script = [Reply(503, b"unavailable"), Reply(500, b"oops"), Reply(502, b"bad gw"), Reply()]
    waits: list[float] = []
    with make(fake, waits, backoff_s=0.5) as r:
        r.score("q", DOCS)
    assert waits == [0.5, 1.0, 2.0]
    assert [a["status"] for a in r.calls[0]["attempts"]] == [503, 500, 502, 200]


class FirstReadTimesOutSoon(httpx.HTTPTransport):
    """httpx's own transport; the first request's read timeout cut to 0.3 s, so the stalled first answer
    times out without waiting out the client's 5 s, while the retry keeps the 5 s (far above a loaded
    machine's answer time: a 0.3 s limit for every request could time out the plain second answer too)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        if self.sent == 1:
            request.extensions["timeout"] = {**request.extensions["timeout"], "read": 0.3}
        return super().handle_request(request)


def test_timeout_is_retried(fake: FakeVoyage) -> None:
    # no answer until the client's read timeout closes the connection; 120 s is a hang guard only
    fake.script = [Reply(stall_s=120), Reply()]
    transport = FirstReadTimesOutSoon()
    with make(fake, transport=transport) as r:
        res = r.score("q", DOCS)
    assert transport.sent == 2
    attempts = r.calls[0]["attempts"]
    assert attempts[0]["status"] is None and "Timeout" in attempts[0]["error"]
    assert attempts[1]["status"] == 200
    assert len(res.scores) == 4


@pytest.mark.parametrize(
    "body",
    [
        b"<html>gateway</html>",
        # documents missing
        b'{"data": [{"index": 0, "relevance_score": 0.5}], "usage": {"total_tokens": 3}}',
        b'{"data": [{"index": 0, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.4},'
        b' {"index": 1, "relevance_score": 0.1}, {"index": 2, "relevance_score": 0.1}],'
        b' "usage": {"total_tokens": 3}}',
        b'{"data": [{"index": 9, "relevance_score": 0.5}], "usage": {"total_tokens": 3}}',
        b'{"data": [], "usage": {}}',
    ],
)
def test_malformed_body_retried_then_ok(fake: FakeVoyage, body: bytes) -> None:
    fake.script = [Reply(200, body), Reply()]
    with make(fake) as r:
        res = r.score("q", DOCS)
    attempts = r.calls[0]["attempts"]
    assert attempts[0]["status"] == 200 and attempts[0]["error"].startswith("malformed body")
    assert res.scores.tolist() == pytest.approx([len(d) / 100.0 for d in DOCS])


def test_gives_up_with_every_attempt_recorded(fake: FakeVoyage) -> None:
    fake.script = [Reply(503, b"x")] * 3
    with make(fake, max_attempts=3) as r, pytest.raises(VoyageError) as info:
        r.score("q", DOCS)
    assert [a["status"] for a in info.value.attempts] == [503, 503, 503]
    assert info.value.attempts[-1]["waited_s"] == 0.0  # no wait after the last attempt
    assert r.calls == []  # nothing fabricated for a failed call


def test_client_error_not_retried(fake: FakeVoyage) -> None:
    fake.script = [Reply(400, b'{"detail":"bad model"}')]
    with make(fake) as r, pytest.raises(VoyageError) as info:
        r.score("q", DOCS)
    assert len(info.value.attempts) == 1 and len(fake.requests) == 1


def test_key_never_in_records_or_errors(fake: FakeVoyage, capsys: pytest.CaptureFixture[str]) -> None:
    echo = json.dumps({"detail": f"invalid key {KEY}"}).encode()
    fake.script = [Reply(500, echo), Reply(200, echo), Reply(401, echo)]
    with make(fake) as r, pytest.raises(VoyageError) as info:
        r.score("q", DOCS)
    dumped = json.dumps(info.value.attempts) + str(info.value) + json.dumps(r.meta.to_dict(), default=str)
    out = capsys.readouterr()
    assert KEY not in dumped and KEY not in out.out and KEY not in out.err
    assert "[REDACTED]" in dumped


def test_empty_passages_no_request(fake: FakeVoyage) -> None:
    with make(fake) as r:
        assert r.score("q", []).scores.shape == (0,)
    assert fake.requests == []


def test_read_api_key(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("# comment\nOTHER=1\nexport VOYAGE_API_KEY='pa-file'\n")
    assert read_api_key(env={}, dotenv=env_file) == "pa-file"
    assert read_api_key(env={"VOYAGE_API_KEY": "pa-env"}, dotenv=env_file) == "pa-env"
    with pytest.raises(BenchError) as info:
        read_api_key(env={}, dotenv=tmp_path / "missing.env")
    assert "VOYAGE_API_KEY" in str(info.value)


def test_not_a_voyage_model() -> None:
    with pytest.raises(BenchError):
        VoyageReranker("bge-v2-m3", api_key=KEY)


def test_token_counts_are_null_with_the_reason_not_zero(fake: FakeVoyage) -> None:
    """Voyage truncates server-side: the record says "not measured" (None and why), never 0;
    the aggregate over calls says the same."""
    with make(fake) as r:
        res = r.score("Frage?", DOCS)
        r.score("Zweite Frage?", DOCS[:2])
        summary = r.log.summary(r.meta)
    assert res.record["max_input_tokens"] is None and res.record["truncated_pairs"] is None
    assert "server-side" in res.record["tokens_unmeasured"]
    assert summary["max_input_tokens"] is None and summary["truncated_pairs"] is None
    assert "server-side" in summary["tokens_unmeasured"]


@pytest.mark.parametrize(
    ("status", "body", "refused"),
    [
        (401, b'{"detail": "Provided API key is invalid."}', True),
        (403, b'{"detail": "Forbidden"}', True),
        (400, b'{"detail": "Model rerank-3 is not supported."}', True),
        (400, b'{"detail": "The input exceeds the limit of 1000 documents."}', False),
    ],
)
def test_refusals_that_stop_the_model(fake: FakeVoyage, status: int, body: bytes, refused: bool) -> None:
    """A bad key, no access or an unknown model name stops the whole model (ModelUnavailable), other client
    errors stay errors of one query."""
    from bench.rerankers.protocol import ModelUnavailable

    fake.script = [Reply(status=status, body=body)]
    with make(fake) as r, pytest.raises(VoyageError) as err:
        r.score("Frage?", DOCS)
    assert isinstance(err.value, ModelUnavailable) is refused
    assert err.value.transient is False and len(fake.requests) == 1
