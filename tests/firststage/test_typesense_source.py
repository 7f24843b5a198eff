"""docs/typesense-source.md has a row, with a source reference, for everything the first stages send or read.

The names are collected from the code, not listed here: the endpoints from the request calls in
``bench/firststage``; the search parameters, ``vector_query`` options and schema properties from dry runs of
the request builders for every stage (and the rehearsal's substitutes); the import and stop-word request
bodies from dry runs against a recording double; the response fields from dry runs of every reader on
answers that record which keys were read. A new parameter or field without a row fails here.
"""

from __future__ import annotations

import re
import types
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import orjson
import pytest

from bench.firststage import collection, server
from bench.firststage.definitions import STAGE_DEFS, ExactSubstitute, vector_options
from bench.firststage.queries import ranked_hits, request_params, vector_only_params
from bench.firststage.resume_check import SCHEMA as RESUME_SCHEMA
from bench.firststage.search import search
from bench.firststage.stopwords import german_stopwords, install_stopwords, server_form

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "typesense-source.md"
V29 = "1c5804194175210b3fbdd4972ba3cff2bbdf85cf"
V30 = "4a092b0417d3ad33e40d75b42cddfab5c58c0f71"
REF = re.compile(r"`[\w/.]*\.(?:cpp|h):\d+`|`:\d+`")


def _rows() -> dict[tuple[str, str], list[str]]:
    rows: dict[tuple[str, str], list[str]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| ") or line.startswith("| name ") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 7, f"docs/typesense-source.md: a row needs 7 cells: {line[:80]}"
        rows[(cells[1], cells[0].strip("`"))] = cells
    return rows


ROWS = _rows()


def _missing(kinds: tuple[str, ...], names: set[str]) -> list[str]:
    return sorted(n for n in names if not any((k, n) in ROWS for k in kinds))


def _norm(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)


class Rec(dict[str, Any]):
    """A JSON object that notes every key read from it (and from objects inside it) in ``seen``."""

    def __init__(self, data: dict[str, Any], seen: set[str]) -> None:
        super().__init__({k: _wrap(v, seen) for k, v in data.items()})
        self.seen = seen

    def __getitem__(self, key: str) -> Any:
        self.seen.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self.seen.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.seen.add(str(key))
        return super().__contains__(key)


def _wrap(value: Any, seen: set[str]) -> Any:
    if isinstance(value, dict):
        return Rec(value, seen)
    if isinstance(value, list):
        return [_wrap(v, seen) for v in value]
    return value


def _vec() -> np.ndarray:
    return np.array([0.5, -0.25, 0.125, 1e-3], dtype=np.float32)


def _all_request_params() -> list[dict[str, Any]]:
    out = []
    for stage in STAGE_DEFS.values():
        for ef in (None, 100):
            for exact in (None, ExactSubstitute.for_corpus(10)):
                out.append(request_params(stage, "Wer war Goethe?", _vec(), ef, exact))
                if stage.vector:
                    out.append(vector_only_params(stage, _vec(), ef, exact))
    return out


def test_the_doc_names_the_commits_read() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert V29 in text and V30 in text and "687d981753f8bafcd16421cbd2a166d0b62bc520" in text


def test_every_row_has_a_source_reference() -> None:
    assert len(ROWS) > 40
    bad = [name for (_, name), cells in ROWS.items() if not REF.search(cells[3])]
    assert bad == []


def test_every_endpoint_we_call_has_a_row() -> None:
    calls = set()
    for path in (ROOT / "bench" / "firststage").glob("*.py"):
        src = path.read_text(encoding="utf-8")
        calls |= {f"{m} {_norm(p)}" for m, p in re.findall(r'"(GET|POST|PUT|DELETE)",\s*f?"(/[^"]*)"', src)}
        calls |= {f"GET {p}" for p in re.findall(r'\{url\}(/health)"', src)}
    assert {"POST /multi_search", "GET /health", "GET /debug", "PUT /stopwords/{}"} <= calls  # the scan works
    rows = {_norm(name) for kind, name in ROWS if kind == "endpoint"}
    assert sorted(calls - rows) == []


def test_every_search_parameter_we_send_has_a_row() -> None:
    sent = {k for p in _all_request_params() for k in p}
    seen: list[dict[str, Any]] = []
    answer = {"results": [{"hits": [], "found": 0, "search_time_ms": 1}]}
    fake = types.SimpleNamespace(request=lambda m, p, json: seen.append(json) or answer)
    search(fake, "c", {"q": "x"})  # type: ignore[arg-type]
    sent |= set(seen[0]["searches"][0])
    assert {"q", "query_by", "prefix", "stopwords", "sort_by", "vector_query", "filter_by"} <= sent
    assert "collection" in sent
    assert _missing(("search",), sent) == []


def test_every_vector_query_option_we_send_has_a_row() -> None:
    literals = [p["vector_query"] for p in _all_request_params() if "vector_query" in p]
    options = {k for lit in literals for k in re.findall(r",\s*(\w+):", lit.split("]", 1)[1])}
    fields = {lit.split(":", 1)[0] for lit in literals}
    for stage in STAGE_DEFS.values():
        options |= set(vector_options(stage, 100, ExactSubstitute.for_corpus(10)))
    assert {"k", "ef", "alpha", "flat_search_cutoff"} <= options and fields == {"embedding"}
    assert _missing(("vector_query",), options | fields) == []


def test_every_schema_property_and_field_type_we_send_has_a_row() -> None:
    schemas = [d.schema(4 if d.vector else None, exact_filter=True) for d in STAGE_DEFS.values()]
    schemas.append(RESUME_SCHEMA)
    keys = {k for s in schemas for k in s} | {k for s in schemas for f in s["fields"] for k in f}
    types_ = {f["type"] for s in schemas for f in s["fields"]}
    assert {"locale", "stem", "num_dim"} <= keys and {"string", "float[]", "int32"} <= types_
    assert _missing(("schema",), keys) == []
    assert _missing(("field type",), types_) == []


class _Answer:
    def __init__(self, lines: list[dict[str, Any]]) -> None:
        self.status_code = 200
        self.text = "\n".join(orjson.dumps(x).decode() for x in lines)


def test_every_import_and_stopword_request_key_has_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: set[str] = set()
    sent: dict[str, Any] = {}

    def raw(method: str, path: str, **kw: Any) -> _Answer:
        sent.update(kw)
        return _Answer([{"success": True}])

    shim = types.SimpleNamespace(
        dumps=orjson.dumps,
        OPT_SERIALIZE_NUMPY=orjson.OPT_SERIALIZE_NUMPY,
        JSONEncodeError=orjson.JSONEncodeError,
        loads=lambda b: Rec(orjson.loads(b), seen),
    )
    monkeypatch.setattr(collection, "orjson", shim)
    collection.import_batch(types.SimpleNamespace(raw=raw), "c", [{"id": "1", "title": "t", "text": "x"}])  # type: ignore[arg-type]
    assert _missing(("import",), set(sent["params"]) | {"id"}) == []
    assert _missing(("response",), seen) == [] and "success" in seen

    bodies: list[dict[str, Any]] = []

    def request(method: str, path: str, json: dict[str, Any] | None = None) -> dict[str, Any]:
        if json is not None:
            bodies.append(json)
            return dict(json)
        tokens = sorted(server_form(german_stopwords().words))
        return Rec({"stopwords": {"id": "s", "stopwords": tokens}}, seen)

    install_stopwords(types.SimpleNamespace(request=request), "s", german_stopwords())
    assert _missing(("stopwords",), set(bodies[0])) == []
    assert _missing(("response",), seen) == []


def test_every_response_field_we_read_has_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: set[str] = set()
    hit = {
        "document": {"id": "d1"},
        "text_match": 578730123365187705,
        "vector_distance": 0.25,
        "hybrid_search_info": {"rank_fusion_score": 0.7},
    }
    answers = [
        {"results": [{"hits": [hit], "found": 1, "search_time_ms": 2}]},
        {"results": [{"error": "Not found.", "code": 404}]},
    ]
    for answer in answers:
        fake = types.SimpleNamespace(request=lambda m, p, json, a=answer: Rec(a, seen))
        try:
            res = search(fake, "c", {"q": "x"})  # type: ignore[arg-type]
        except Exception:
            continue
        for stage in STAGE_DEFS.values():
            ranked_hits(stage, res.hits, {"d1": 0})
    counter = types.SimpleNamespace(request=lambda m, p: Rec({"num_documents": 3}, seen))
    collection.count_documents(counter, "c")  # type: ignore[arg-type]
    summary = {"fields": [{"name": "title", "type": "string", "locale": "de", "stem": True}]}
    collection.schema_mismatches(STAGE_DEFS["keyword-71k"].schema(), Rec(summary, seen))

    def json_of(self: httpx.Response, **kw: Any) -> Any:
        return Rec(orjson.loads(self.content), seen)

    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"ok": True} if req.url.path == "/health" else {"version": "30.2"})

    real_client = httpx.Client
    monkeypatch.setattr(httpx.Response, "json", json_of)
    mock = httpx.MockTransport(handler)
    monkeypatch.setattr(server.httpx, "Client", lambda **kw: real_client(transport=mock, **kw))
    proc = types.SimpleNamespace(poll=lambda: None)
    server._wait_healthy("http://ts.test", proc, Path("log"), 5.0)  # type: ignore[arg-type]
    assert server.TypesenseServer("http://ts.test", "k").version == "30.2"

    expected = {
        "results",
        "hits",
        "found",
        "search_time_ms",
        "error",
        "code",
        "document",
        "id",
        "text_match",
        "vector_distance",
        "hybrid_search_info",
        "rank_fusion_score",
        "num_documents",
        "fields",
        "ok",
        "version",
    }
    assert expected <= seen  # the dry runs reached every reader
    assert _missing(("response", "schema"), seen - {"id"}) == []
    assert _missing(("import",), {"id"}) == []
