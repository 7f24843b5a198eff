"""Typesense collections: create or verify a schema, import documents in batches (upsert).

An existing collection is reused only if every field property the stage sets is present with the same
value (so a server that dropped a property it does not know, or a collection built with other settings,
is an error, not a silent reuse).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from bench.errors import BenchError
from bench.firststage.server import TypesenseServer


def get_collection(server: TypesenseServer, name: str) -> dict[str, Any] | None:
    resp = server.raw("GET", f"/collections/{name}")
    if resp.status_code == 404:
        return None
    if resp.status_code != 200:
        raise BenchError(f"Typesense GET /collections/{name} answered {resp.status_code}: {resp.text[:300]}")
    data: dict[str, Any] = resp.json()
    return data


def schema_mismatches(wanted: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    have = {f["name"]: f for f in actual.get("fields", [])}
    problems: list[str] = []
    for field in wanted["fields"]:
        got = have.get(field["name"])
        if got is None:
            problems.append(f"field {field['name']!r} missing")
            continue
        for key, value in field.items():
            if got.get(key) != value:
                problems.append(f"field {field['name']!r}: {key}={got.get(key)!r}, stage needs {value!r}")
    extra = sorted(set(have) - {f["name"] for f in wanted["fields"]})
    if extra:
        problems.append(f"extra fields {extra}")
    return problems


def ensure_collection(server: TypesenseServer, schema: Mapping[str, Any]) -> bool:
    """Create the collection, or verify an existing one; returns True if it was created."""
    name = schema["name"]
    existing = get_collection(server, name)
    if existing is None:
        created = server.request("POST", "/collections", json=dict(schema))
        problems = schema_mismatches(schema, created)
        if problems:
            server.raw("DELETE", f"/collections/{name}")
            raise BenchError(
                f"Typesense {server.version} did not keep the schema of {name}: {'; '.join(problems)} "
                "(a property the server does not support)"
            )
        return True
    problems = schema_mismatches(schema, existing)
    if problems:
        raise BenchError(
            f"collection {name} exists on {server.url} with a different schema: {'; '.join(problems)}. "
            f"Delete it (DELETE /collections/{name}) or use a fresh data directory."
        )
    return False


def count_documents(server: TypesenseServer, name: str) -> int:
    info = server.request("GET", f"/collections/{name}")
    return int(info["num_documents"])


def import_body(docs: Sequence[Mapping[str, Any]]) -> bytes:
    """The JSONL request body of one import batch: one compact UTF-8 JSON object per document.

    Serialised by orjson (its numpy option writes a float64 vector straight from the array, without a
    Python float per element): this was most of the import time with 1024-dim vectors (issue 15). The
    body parses to exactly the documents ``json.dumps(d, ensure_ascii=False, separators=(",", ":"))``
    gave before: the same keys, strings and float64 values; only the spelling of some numbers differs
    (``1e-07`` there is ``1e-7`` here, ``7.1e-05`` is ``0.000071``). Vectors must be float64 to keep
    their values: orjson writes a float32 array with float32's shortest digits, another float64 value.
    """
    try:
        return b"\n".join(orjson.dumps(d, option=orjson.OPT_SERIALIZE_NUMPY) for d in docs)
    except orjson.JSONEncodeError as exc:
        first = docs[0].get("id") if docs else None
        raise BenchError(
            f"a document of the batch starting at {first!r} cannot be written as JSON: {exc}"
        ) from exc


def import_batch(server: TypesenseServer, name: str, docs: Sequence[Mapping[str, Any]]) -> None:
    """Upsert ``docs`` in order; every line of the answer must report success."""
    resp = server.raw(
        "POST",
        f"/collections/{name}/documents/import",
        params={"action": "upsert"},
        content=import_body(docs),
        headers={"Content-Type": "text/plain"},
    )
    if resp.status_code != 200:
        raise BenchError(f"import into {name} failed: {resp.status_code} {resp.text[:300]}")
    lines = resp.text.splitlines()
    if len(lines) != len(docs):
        raise BenchError(f"import into {name}: {len(docs)} documents sent, {len(lines)} results returned")
    for doc, line in zip(docs, lines, strict=True):
        result = orjson.loads(line)
        if result.get("success") is not True:
            raise BenchError(
                f"import into {name}: document {doc.get('id')!r} rejected: {result.get('error')}"
            )


def import_all(server: TypesenseServer, name: str, docs: Iterable[Mapping[str, Any]], batch_size: int) -> int:
    n = 0
    batch: list[Mapping[str, Any]] = []
    for d in docs:
        batch.append(d)
        if len(batch) >= batch_size:
            import_batch(server, name, batch)
            n += len(batch)
            batch = []
    if batch:
        import_batch(server, name, batch)
        n += len(batch)
    return n
