"""One search request per query through ``/multi_search`` (vectors do not fit in a URL), with the
server-reported ``search_time_ms`` and the client wall time (``perf_counter_ns``) of the HTTP call."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bench.core.errors import BenchError
from bench.firststage.server import TypesenseServer


@dataclass(frozen=True)
class SearchResult:
    hits: list[dict[str, Any]]
    found: int
    server_ms: float
    client_ms: float


def search(server: TypesenseServer, collection: str, params: Mapping[str, Any]) -> SearchResult:
    body = {"searches": [{"collection": collection, **params}]}
    t0 = time.perf_counter_ns()
    data = server.request("POST", "/multi_search", json=body)
    client_ms = (time.perf_counter_ns() - t0) / 1e6
    results = data.get("results")
    if not isinstance(results, list) or len(results) != 1:
        raise BenchError(f"Typesense multi_search returned an unexpected answer: {str(data)[:300]}")
    res = results[0]
    if "error" in res:
        raise BenchError(f"Typesense search in {collection} failed ({res.get('code')}): {res['error']}")
    return SearchResult(
        hits=list(res.get("hits", [])),
        found=int(res.get("found", 0)),
        server_ms=float(res["search_time_ms"]),
        client_ms=client_ms,
    )


def vector_literal(vec: Any, **options: Any) -> str:
    """``embedding:([v1,v2,...], k: 100, ...)``, floats at full float32 precision."""
    values = ",".join(repr(float(x)) for x in vec)
    opts = "".join(f", {k}: {v}" for k, v in options.items())
    return f"embedding:([{values}]{opts})"
