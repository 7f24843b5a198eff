"""The Voyage rerank endpoint on the tests' loopback server (``tests.support.loopback``), with the real
response shape: ``data`` sorted by score, ``usage.total_tokens``, scores put back by ``index``.

Replies come from ``script`` (one per request, in order), else from ``by_query[query]`` (one per attempt of
that query), else a well-formed answer. ``key`` (when set) must be the bearer token, else 401 as the real
API answers a bad key; queries in ``fail_queries`` get 503. Scores: ``score(query, index, passage)``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support.loopback import Loopback, OnLoopback, Request, Response

Score = Callable[[str, int, str], float]


def by_length(query: str, index: int, passage: str) -> float:
    return float(len(passage)) / 100.0


def first_stage_order(query: str, index: int, passage: str) -> float:
    return 1.0 / (1 + index)


def answer(payload: dict[str, Any], score: Score = by_length) -> bytes:
    """A well-formed answer: data sorted by score descending, as the real endpoint returns it."""
    query, docs = payload["query"], payload["documents"]
    items = [{"index": i, "relevance_score": score(query, i, d)} for i, d in enumerate(docs)]
    items.sort(key=lambda it: -it["relevance_score"])
    tokens = sum(len(d.split()) + len(query.split()) for d in docs)
    body = {"object": "list", "data": items, "model": payload["model"], "usage": {"total_tokens": tokens}}
    return json.dumps(body).encode()


@dataclass
class Reply:
    status: int = 200
    body: bytes | None = None  # None: a well-formed answer (status 200) or a short error body
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    stall_s: float | None = None  # no answer until the client gives up (tests.support.loopback.Response)


class FakeVoyage(OnLoopback):
    """``url`` is the API base (``.../v1``); ``requests`` the parsed requests (path, json, auth, port)."""

    def __init__(self, *, score: Score = by_length, key: str | None = None, keep_alive: bool = True) -> None:
        self.script: list[Reply] = []
        self.by_query: dict[str, list[Reply]] = {}
        self.fail_queries: set[str] = set()
        self.key = key
        self.score = score
        self.requests: list[dict[str, Any]] = []
        self.server = Loopback(self._respond, keep_alive=keep_alive)
        self.url = f"{self.server.url}/v1"

    def _reply(self, payload: dict[str, Any], auth: str | None) -> Reply:
        if self.script:
            return self.script.pop(0)
        queue = self.by_query.get(payload["query"])
        if queue:
            return queue.pop(0)
        if self.key is not None and auth != f"Bearer {self.key}":
            return Reply(401, b'{"detail": "Provided API key is invalid."}')
        if payload["query"] in self.fail_queries:
            return Reply(503, b'{"detail": "Service unavailable"}')
        return Reply()

    def _respond(self, request: Request) -> Response:
        payload = request.json()
        auth = request.headers.get("authorization")
        self.requests.append(
            {"path": request.path, "json": payload, "auth": auth, "client_port": request.client_port}
        )
        reply = self._reply(payload, auth)
        if reply.body is not None:
            body = reply.body
        else:
            body = answer(payload, self.score) if reply.status == 200 else b'{"detail": "scripted error"}'
        headers = {**reply.headers, "Content-Type": "application/json"}
        return Response(reply.status, body, headers, delay_s=reply.delay_s, stall_s=reply.stall_s)
