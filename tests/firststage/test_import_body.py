"""The import's request body: orjson-built bodies parse to exactly the documents that the former
``json.dumps`` bodies held, and ``import_batch`` posts them (a loopback server records what arrives)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson
import pytest

from bench.core.errors import BenchError
from bench.data import Passage
from bench.firststage.collection import import_batch, import_body
from bench.firststage.importer import text_doc
from bench.firststage.server import TypesenseServer
from tests.support.loopback import Loopback, Request, Response

TEXTS = [
    ("Größe", 'Ein "Haus" mit \\ und / und\nZeilen\tTabs, \x01, \x7f, \u2028, € und 𝔊.'),
    ("", "Wo liegt Kanada?"),
    ("Ä", " führende und folgende Leerzeichen "),
]


def _reference_body(docs: list[dict[str, Any]]) -> bytes:
    """The body as bench built it before the orjson bodies (vectors as Python floats from ``.tolist()``)."""
    return "\n".join(json.dumps(d, ensure_ascii=False, separators=(",", ":")) for d in docs).encode("utf-8")


def _matrix(n: int, dims: int = 1024) -> np.ndarray:
    rng = np.random.default_rng(20261130)
    m = rng.standard_normal((n, dims)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    m[0, :6] = [1e-7, 7.1e-05, -0.0, 0.0, 1.0, -3.4e-38]  # exponent spellings, signed zero, tiny values
    return m


def _passages(n: int) -> list[Passage]:
    return [Passage(f"{i // 3 + 1}#{i % 3}", *TEXTS[i % len(TEXTS)]) for i in range(n)]


def _parsed(body: bytes) -> str:
    # repr keeps what == would hide: -0.0 against 0.0, 1 against 1.0
    return repr([json.loads(line) for line in body.split(b"\n")])


def test_body_parses_to_the_former_documents() -> None:
    passages, m = _passages(40), _matrix(40)
    before = [{**text_doc(p), "embedding": m[i].tolist()} for i, p in enumerate(passages)]
    rows = np.ascontiguousarray(m, dtype=np.float64)  # what the vector stages hand to the importer now
    now = [{**text_doc(p), "embedding": rows[i]} for i, p in enumerate(passages)]
    body, reference = import_body(now), _reference_body(before)
    assert _parsed(body) == _parsed(reference)
    assert body.count(b"\n") == 39 and body != reference  # same documents, some numbers spelled differently
    assert b'"title":"Gr\xc3\xb6\xc3\x9fe"' in body  # UTF-8, not \u escapes, as before
    text_only = [text_doc(p) for p in passages]
    assert import_body(text_only) == _reference_body(text_only)  # without vectors: byte for byte


def test_float32_rows_would_change_the_values() -> None:
    """Why the stages convert to float64: float32's shortest digits are another float64 value."""
    m = _matrix(2)
    f32 = orjson.loads(orjson.dumps(m[1], option=orjson.OPT_SERIALIZE_NUMPY))
    assert f32 != m[1].tolist()
    assert np.array_equal(np.asarray(f32, dtype=np.float32), m[1])  # (the float32 values themselves agree)


def test_unserialisable_document_names_the_batch() -> None:
    with pytest.raises(BenchError, match=r"batch starting at '1#0' cannot be written as JSON"):
        import_body([{"id": "1#0", "text": "\ud800"}])  # a lone surrogate is not UTF-8


def _answer(request: Request) -> Response:
    """/debug: a version; an import: one success line per document sent."""
    if request.method == "GET":
        return Response(200, b'{"version":"0.24.1"}')
    return Response(200, b"\n".join([b'{"success":true}'] * (request.body.count(b"\n") + 1)))


@pytest.fixture
def recorder() -> Iterator[Loopback]:
    with Loopback(_answer) as server:
        yield server


def test_import_batch_posts_the_body(recorder: Loopback) -> None:
    server = TypesenseServer(recorder.url, "key")
    passages, m = _passages(5), _matrix(5)
    rows = m.astype(np.float64)
    import_batch(server, "c", [{**text_doc(p), "embedding": rows[i]} for i, p in enumerate(passages)])
    server.close()
    (sent,) = [r.body for r in recorder.requests if r.method == "POST"]
    before = [{**text_doc(p), "embedding": m[i].tolist()} for i, p in enumerate(passages)]
    assert _parsed(sent) == _parsed(_reference_body(before))
