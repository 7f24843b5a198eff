"""Typesense collections: create or verify a schema, import documents in batches (upsert).

An existing collection is reused only if every field property the stage sets is present with the same
value (so a server that dropped a property it does not know, or a collection built with other settings,
is an error, not a silent reuse).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

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


def import_batch(server: TypesenseServer, name: str, docs: Sequence[Mapping[str, Any]]) -> None:
    """Upsert ``docs`` in order; every line of the answer must report success."""
    body = "\n".join(json.dumps(d, ensure_ascii=False, separators=(",", ":")) for d in docs)
    resp = server.raw(
        "POST",
        f"/collections/{name}/documents/import",
        params={"action": "upsert"},
        content=body.encode("utf-8"),
        headers={"Content-Type": "text/plain"},
    )
    if resp.status_code != 200:
        raise BenchError(f"import into {name} failed: {resp.status_code} {resp.text[:300]}")
    lines = resp.text.splitlines()
    if len(lines) != len(docs):
        raise BenchError(f"import into {name}: {len(docs)} documents sent, {len(lines)} results returned")
    for doc, line in zip(docs, lines, strict=True):
        result = json.loads(line)
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
