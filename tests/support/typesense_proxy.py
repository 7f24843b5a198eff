"""A stand-in for a Typesense server that behaves wrongly in one chosen way: a loopback server
(``tests.support.loopback``) that forwards every request to the real 0.24.1 and changes one thing on the
way in or out: a search parameter, a ``vector_query`` option or a schema property dropped (a server that
ignores it), an answer rewritten, a version it claims in ``GET /debug``, or a failing answer of its own
(error status, no answer, malformed body) for the requests ``fail`` picks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx

from bench.firststage.server import TypesenseServer, tls_context
from tests.support.loopback import Loopback, OnLoopback, Request, Response, json_response

Rewrite = Callable[[Request, bytes], bytes]


class TypesenseProxy(OnLoopback):
    def __init__(
        self,
        real: TypesenseServer,
        *,
        version: str | None = None,
        request: Rewrite | None = None,
        answer: Rewrite | None = None,
        fail: Callable[[Request], Response | None] | None = None,
    ) -> None:
        self.real, self.version = real, version
        self.rewrite_request, self.rewrite_answer, self.fail = request, answer, fail
        self.client = httpx.Client(base_url=real.url, timeout=30, verify=tls_context())
        self.server = Loopback(self._respond)

    def close(self) -> None:
        super().close()
        self.client.close()

    @property
    def url(self) -> str:
        return self.server.url

    def handle(self) -> TypesenseServer:
        return TypesenseServer(self.url, self.real.api_key)

    def _respond(self, req: Request) -> Response:
        if self.fail is not None and (reply := self.fail(req)) is not None:
            return reply
        if req.path == "/debug" and self.version is not None:
            return json_response(200, {"state": 1, "version": self.version})
        body = self.rewrite_request(req, req.body) if self.rewrite_request else req.body
        headers = {"X-TYPESENSE-API-KEY": self.real.api_key}
        if "content-type" in req.headers:
            headers["Content-Type"] = req.headers["content-type"]
        resp = self.client.request(req.method, req.path, content=body, headers=headers)
        out = self.rewrite_answer(req, resp.content) if self.rewrite_answer else resp.content
        return Response(resp.status_code, out, {"Content-Type": resp.headers.get("content-type", "")})


def _is_search(req: Request) -> bool:
    return req.method == "POST" and req.path.startswith("/multi_search")


def drop_search_param(name: str) -> Rewrite:
    """A server that ignores search parameter ``name``."""

    def rewrite(req: Request, body: bytes) -> bytes:
        if not _is_search(req):
            return body
        data = json.loads(body)
        for s in data["searches"]:
            s.pop(name, None)
        return json.dumps(data).encode()

    return rewrite


def drop_vector_option(name: str) -> Rewrite:
    """A server that ignores ``name`` inside ``vector_query``."""
    pattern = re.compile(rf",\s*{re.escape(name)}:\s*[^,)]+")

    def rewrite(req: Request, body: bytes) -> bytes:
        if not _is_search(req):
            return body
        data = json.loads(body)
        for s in data["searches"]:
            if "vector_query" in s:
                s["vector_query"] = pattern.sub("", s["vector_query"])
        return json.dumps(data).encode()

    return rewrite


def drop_field_property(name: str) -> Rewrite:
    """A server that ignores field property ``name`` when a collection is created."""

    def rewrite(req: Request, body: bytes) -> bytes:
        if not (req.method == "POST" and req.path == "/collections"):
            return body
        data = json.loads(body)
        for f in data["fields"]:
            f.pop(name, None)
        return json.dumps(data).encode()

    return rewrite


def search_answers(change: Callable[[dict[str, Any]], None]) -> Rewrite:
    """Rewrite every search result of a ``/multi_search`` answer in place with ``change``."""

    def rewrite(req: Request, body: bytes) -> bytes:
        if not _is_search(req):
            return body
        data = json.loads(body)
        for res in data.get("results", []):
            change(res)
        return json.dumps(data).encode()

    return rewrite
