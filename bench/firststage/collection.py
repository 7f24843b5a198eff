"""Typesense collections: create or verify a schema, import documents in batches (upsert).

A server that stops answering for a while after a large batch (reported upstream for imports of tens of
millions of documents: 503 "Not Ready or Lagging", or no answer at all) is waited for with a bounded
exponential back-off (``Backoff``): every wait is recorded and the batch is re-sent as the same upsert
(which keeps the documents' sequence ids); only when the server has not answered within the budget is it
a failure, and the import then resumes from its checkpoint.

An existing collection is reused only if every field property the stage sets is present with the same
value (so a server that dropped a property it does not know, or a collection built with other settings,
is an error, not a silent reuse).
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from bench.core.errors import BenchError
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
    Python float per element): this was most of the import time with 1024-dim vectors. The
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


@dataclass(frozen=True)
class Backoff:
    """Waits after a stall: ``first_s * factor**i`` seconds, at most ``max_wait_s`` each; a failure once
    ``budget_s`` have passed since the batch was first sent without an answer."""

    first_s: float = 1.0
    factor: float = 2.0
    max_wait_s: float = 60.0
    budget_s: float = 1800.0

    def record(self) -> dict[str, float]:
        return dict(self.__dict__)


DEFAULT_BACKOFF = Backoff()
STALL_STATUSES = (503,)  # Typesense: "Not Ready or Lagging"


def _stall_reason(exc: BenchError) -> str | None:
    cause = exc.__cause__
    return f"{type(cause).__name__}: {cause}"[:200] if isinstance(cause, httpx.TransportError) else None


def _send_import(server: TypesenseServer, name: str, body: bytes) -> httpx.Response | str:
    """One POST of the batch: the server's answer, or the reason it stalled (no answer, or a stall status)."""
    try:
        resp = server.raw(
            "POST",
            f"/collections/{name}/documents/import",
            params={"action": "upsert"},
            content=body,
            headers={"Content-Type": "text/plain"},
        )
    except BenchError as exc:
        reason = _stall_reason(exc)
        if reason is None:
            raise
        return reason
    if resp.status_code in STALL_STATUSES:
        return f"{resp.status_code} {resp.text.strip()[:150]}"
    return resp


def import_batch(
    server: TypesenseServer,
    name: str,
    docs: Sequence[Mapping[str, Any]],
    *,
    backoff: Backoff = DEFAULT_BACKOFF,
    stalls: list[dict[str, Any]] | None = None,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] | None = None,
) -> None:
    """Upsert ``docs`` in order; every line of the answer must report success. Stalls (no answer, 503)
    are waited for by ``backoff`` and appended to ``stalls``."""
    sleep = sleep or time.sleep
    clock = clock or time.monotonic
    body = import_body(docs)
    first = docs[0].get("id") if docs else None
    started = clock()
    attempt = 0
    while True:
        answer = _send_import(server, name, body)
        if not isinstance(answer, str):  # an answer (any object with status_code and text), not a stall
            resp = answer
            break
        reason = answer
        wait = min(backoff.first_s * backoff.factor**attempt, backoff.max_wait_s)
        elapsed = clock() - started
        if elapsed + wait > backoff.budget_s:
            raise BenchError(
                f"import into {name}: the server has not taken the batch starting at {first!r} for "
                f"{elapsed:.0f} s ({attempt + 1} attempts, last: {reason}; back-off budget "
                f"{backoff.budget_s:.0f} s). Nothing is lost: start the server again and rerun the same "
                "command, the import resumes from its checkpoint."
            )
        print(
            f"typesense: the server did not take the batch starting at {first!r} ({reason}); "
            f"waiting {wait:.0f} s (attempt {attempt + 1}, {elapsed:.0f} s of {backoff.budget_s:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
        if stalls is not None:
            stalls.append(
                {
                    "batch_first_id": first,
                    "attempt": attempt + 1,
                    "reason": reason,
                    "waited_s": wait,
                    "since_first_send_s": elapsed,
                }
            )
        sleep(wait)
        attempt += 1
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


def collection_digest(server: TypesenseServer, name: str) -> dict[str, Any]:
    """Document count and SHA-256 over ``id<TAB>position<LF>`` of every document in export order.

    ``/documents/export`` walks the store by sequence id (Typesense keys documents by their big-endian
    seq id), so the position is the insertion order on which the plan's tie rule rests; two collections
    with the same digest hold the same ids in the same order (checked against ``sort_by=_seq_id:asc`` in the
    tests)."""
    h = hashlib.sha256()
    n = 0
    with server.client.stream(
        "GET", f"/collections/{name}/documents/export", params={"include_fields": "id"}
    ) as resp:
        if resp.status_code != 200:
            raise BenchError(f"export of {name} failed: {resp.status_code}")
        for line in resp.iter_lines():
            if not line.strip():
                continue
            h.update(f"{orjson.loads(line)['id']}\t{n}\n".encode())
            n += 1
    reported = count_documents(server, name)
    return {"documents": n, "id_position_sha256": h.hexdigest(), "count_reported": reported}
