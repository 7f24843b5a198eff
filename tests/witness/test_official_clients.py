"""The vendors' official clients as witnesses of our thin httpx clients.

The same operations go through the official client (``typesense`` 2.1.1, ``voyageai`` 0.5.0, dev group only)
and through ours (``bench.firststage``'s ``TypesenseServer`` and the functions the stages call;
``bench.rerankers.voyage.VoyageReranker``) to a loopback server on 127.0.0.1 that records every request.
What the server reads is compared: method, path, query parameters, the JSON body (JSON lines for an
import), and the headers the API reads (the API key, ``Content-Type``). Headers no API reads (user agent,
``Accept``, ``Accept-Encoding``, ``Connection``, ``Content-Length``) are not compared.

Every difference found is listed in ``KNOWN``, each harmless; a new difference, or a listed one that went
away, fails here:
- ``Content-Type`` (collection, import, stop words, search): the Typesense client sends none, we send
  ``application/json`` (``text/plain`` for the import); the server does not read it (no ``content-type`` in
  ``src/http_server.cpp`` or ``src/core_api.cpp`` at the v30 branch commit); 0.24.1 takes ours in every test.
- ``union: false`` in the ``multi_search`` body: sent by the Typesense client, not by us; the server's default
  (``src/core_api.cpp:989`` at the v30 branch; new in v28.0); 0.24.1 does not read it.
- ``per_page``: the Typesense client sends the string ``"100"``, we the number; the server reads both.
- Voyage ``top_k``: the client sends ``null``, we omit it; both mean every document.
- Voyage ``return_documents``: we send ``false`` (the API's default); the client 0.5.0 cannot send it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from bench.core.plan import RERANKERS
from bench.firststage.collection import ensure_collection, import_batch
from bench.firststage.search import search
from bench.firststage.server import TypesenseServer
from bench.firststage.stopwords import install_stopwords
from bench.rerankers.voyage import VoyageReranker
from tests.support.loopback import Loopback, Request, Response, json_response

KEY = "witness-key"
SCHEMA = {
    "name": "witness",
    "fields": [
        {"name": "title", "type": "string", "locale": "de", "stem": True},
        {"name": "text", "type": "string", "locale": "de", "stem": True},
    ],
}
DOCS = [
    {"id": "1#0", "title": "Irokesen", "text": "Die Irokesen waren Indianer"},
    {"id": "2#0", "title": "U-Boot", "text": "Ein U-Boot taucht"},
]
SEARCH = {
    "q": "Irokesen-Indianer",
    "query_by": "title,text",
    "per_page": 100,
    "prefix": "false",
    "sort_by": "_text_match:desc,_seq_id:asc",
    "stopwords": "miracl-de-snowball",
    "exclude_fields": "embedding",
    "vector_query": "embedding:([0.25,-0.5], k: 100, alpha: 0.3, ef: 200)",
}
WORDS = ["aber", "alle", "daß"]
QUERY, PASSAGES = "Wo ist das Gebiet der Irokesen-Indianer?", ["Die Irokesen waren Indianer", "Ein U-Boot"]
READ_HEADERS = ("x-typesense-api-key", "authorization", "content-type")

#: (operation, field) -> (official client, ours): every difference, explained in docs/phases.md
KNOWN: dict[tuple[str, str], tuple[Any, Any]] = {
    ("import", "content-type"): (None, "text/plain"),
    ("stopwords", "content-type"): (None, "application/json"),
    ("collection", "content-type"): (None, "application/json"),
    ("search", "content-type"): (None, "application/json"),
    ("search", "body.union"): (False, "absent"),
    ("search", "body.searches[0].per_page type"): ("str", "int"),
    ("rerank", "body.top_k"): (None, "absent"),
    ("rerank", "body.return_documents"): ("absent", False),
}


def _typesense_answer(req: Request) -> Response:
    path = urlsplit(req.path).path
    if path == "/debug":
        return json_response(200, {"state": 1, "version": "30.2"})
    if path == "/collections" and req.method == "POST":
        return json_response(201, {**req.json(), "num_documents": 0})
    if path.startswith("/collections/") and req.method == "GET" and path.count("/") == 2:
        return json_response(404, {"message": "Not Found"})
    if path.endswith("/documents/import"):
        return Response(
            200,
            b"\n".join(b'{"success":true}' for _ in req.body.splitlines()),
            {"Content-Type": "text/plain"},
        )
    if path.startswith("/stopwords/"):
        return json_response(
            200, {"stopwords": {"id": path.rsplit("/", 1)[1], "stopwords": ["aber", "alle", "dass"]}}
        )
    if path == "/multi_search":
        return json_response(200, {"results": [{"hits": [], "found": 0, "search_time_ms": 1}]})
    return json_response(404, {"message": "Not Found"})


def _voyage_answer(req: Request) -> Response:
    n = len(req.json()["documents"])
    return json_response(
        200,
        {
            "object": "list",
            "model": req.json()["model"],
            "usage": {"total_tokens": 9},
            "data": [{"index": i, "relevance_score": 1.0 / (i + 1)} for i in range(n)],
        },
    )


def _read(req: Request) -> dict[str, Any]:
    """What the API reads of one request."""
    parts = urlsplit(req.path)
    ctype = req.headers.get("content-type")
    if req.body and ctype != "application/json" and parts.path.endswith("/import"):
        body: Any = [json.loads(line) for line in req.body.splitlines()]
    else:
        body = json.loads(req.body) if req.body else None
    headers = {h: req.headers.get(h) for h in READ_HEADERS}
    return {"method": req.method, "path": parts.path, "query": parse_qs(parts.query), "body": body, **headers}


def _differences(op: str, official: Request, ours: Request) -> dict[tuple[str, str], tuple[Any, Any]]:
    a, b = _read(official), _read(ours)
    out: dict[tuple[str, str], tuple[Any, Any]] = {}
    for key in ("method", "path", "query", *READ_HEADERS):
        if a[key] != b[key]:
            out[(op, key)] = (a[key], b[key])
    if isinstance(a["body"], dict) and isinstance(b["body"], dict):
        out |= _body_differences(op, "body", a["body"], b["body"])
    elif a["body"] != b["body"]:
        out[(op, "body")] = (a["body"], b["body"])
    return out


def _body_differences(op: str, where: str, a: dict[str, Any], b: dict[str, Any]) -> dict[Any, Any]:
    """Key by key; the one search of a multi_search body key by key too; a value the two send as the same
    text in different JSON types is named by its types."""
    out: dict[tuple[str, str], tuple[Any, Any]] = {}
    for k in sorted(set(a) | set(b)):
        va, vb = a.get(k, "absent"), b.get(k, "absent")
        if k == "searches" and isinstance(va, list) and isinstance(vb, list) and len(va) == len(vb) == 1:
            out |= _body_differences(op, f"{where}.searches[0]", va[0], vb[0])
        elif va != vb and str(va) == str(vb):
            out[(op, f"{where}.{k} type")] = (type(va).__name__, type(vb).__name__)
        elif va != vb:
            out[(op, f"{where}.{k}")] = (va, vb)
    return out


def _official_typesense(url: str) -> Any:
    import typesense

    host, port = urlsplit(url).netloc.split(":")
    return typesense.Client(
        {
            "api_key": KEY,
            "nodes": [{"host": host, "port": port, "protocol": "http"}],
            "connection_timeout_seconds": 10,
            "num_retries": 0,
        }
    )


def _last(lb: Loopback, path_end: str, method: str) -> Request:
    return [r for r in lb.requests if urlsplit(r.path).path.endswith(path_end) and r.method == method][-1]


OPS: dict[str, tuple[str, str, Callable[[Any], None], Callable[[TypesenseServer], None]]] = {
    "collection": (
        "/collections",
        "POST",
        lambda c: c.collections.create(SCHEMA),
        lambda s: ensure_collection(s, SCHEMA),
    ),
    "import": (
        "/documents/import",
        "POST",
        lambda c: c.collections["witness"].documents.import_(DOCS, {"action": "upsert"}),
        lambda s: import_batch(s, "witness", DOCS),
    ),
    "stopwords": (
        "/stopwords/miracl-de-snowball",
        "PUT",
        lambda c: c.stopwords.upsert("miracl-de-snowball", {"stopwords": WORDS, "locale": "de"}),
        lambda s: _install(s),
    ),
    "search": (
        "/multi_search",
        "POST",
        lambda c: c.multi_search.perform({"searches": [{"collection": "witness", **SEARCH}]}, {}),
        lambda s: search(s, "witness", SEARCH),
    ),
}


def _install(server: TypesenseServer) -> None:
    from bench.firststage.stopwords import StopwordSet

    install_stopwords(
        server, "miracl-de-snowball", StopwordSet(tuple(WORDS), 3, "witness", "0" * 64, "3.1.1")
    )


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # typesense 2.1.1 about its own analytics API
@pytest.mark.parametrize("op", list(OPS))
def test_typesense_requests_are_the_official_clients(op: str) -> None:
    path_end, method, official, ours = OPS[op]
    with Loopback(_typesense_answer) as lb:
        official(_official_typesense(lb.url))
        first = _last(lb, path_end, method)
        server = TypesenseServer(lb.url, KEY)
        try:
            ours(server)
        finally:
            server.close()
        second = _last(lb, path_end, method)
    assert first is not second
    got = _differences(op, first, second)
    assert got == {k: v for k, v in KNOWN.items() if k[0] == op}
    assert _read(first)["x-typesense-api-key"] == _read(second)["x-typesense-api-key"] == KEY


def test_voyage_requests_are_the_official_clients() -> None:
    import voyageai

    model = RERANKERS["voyage-rerank-3"].model
    with Loopback(_voyage_answer) as lb:
        official = voyageai.Client(api_key=KEY, base_url=f"{lb.url}/v1", max_retries=0)
        theirs = official.rerank(QUERY, PASSAGES, model=model, truncation=True)
        with VoyageReranker("voyage-rerank-3", api_key=KEY, base_url=f"{lb.url}/v1", max_attempts=1) as ours:
            result = ours.score(QUERY, PASSAGES)
        first, second = lb.requests[-2:]
    got = _differences("rerank", first, second)
    assert got == {k: v for k, v in KNOWN.items() if k[0] == "rerank"}
    assert _read(first)["authorization"] == _read(second)["authorization"] == f"Bearer {KEY}"
    assert _read(first)["content-type"] == _read(second)["content-type"] == "application/json"
    # both read the same answer the same way: scores by document index
    assert [r.relevance_score for r in sorted(theirs.results, key=lambda r: r.index)] == list(result.scores)
