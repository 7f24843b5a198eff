"""Streaming, resumable import into Typesense (plan: "documents imported in ascending passage-id order").

Passages arrive as a stream (the full corpus is never held in memory) and must already be in ascending
MIRACL id order (checked on the fly; ``bench.data.IMPORT_ORDER``). After each batch a checkpoint file
records how many passages are in the collection and the last id. After a crash the import resumes after
that id: the stream is read again up to it (nothing is re-sent) and the batch that may have been cut is
re-sent as an upsert, which keeps the documents' original sequence ids (docs/field-notes.md), so the
insertion order and hence the tie order is the same as without the crash. At the end the document count
is checked against what was sent and against the expected corpus size.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.core.atomic import write_json_atomic
from bench.core.errors import BenchError
from bench.core.progress import Progress
from bench.data import DocidKey, Passage, docid_key, format_docid_key
from bench.firststage.collection import (
    DEFAULT_BACKOFF,
    Backoff,
    count_documents,
    ensure_collection,
    import_batch,
)
from bench.firststage.server import TypesenseServer

DocBuilder = Callable[[list[Passage], int], list[dict[str, Any]]]  # (batch, index of first) -> documents


def text_doc(p: Passage) -> dict[str, Any]:
    return {"id": p.docid, "title": p.title, "text": p.text}


def text_docs(batch: list[Passage], start: int) -> list[dict[str, Any]]:
    return [text_doc(p) for p in batch]


@dataclass(frozen=True)
class ImportRecord:
    collection: str
    documents: int
    created: bool
    resumed_from: int
    batch_size: int
    seconds: float
    stalls: tuple[dict[str, Any], ...] = ()  # server stalls waited for (bench.firststage.collection.Backoff)

    def record(self) -> dict[str, Any]:
        return {**self.__dict__, "stalls": list(self.stalls)}


def schema_sha256(schema: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()


def _load_checkpoint(path: Path, schema_sha: str) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BenchError(
            f"{path}: import checkpoint unreadable ({exc.msg}); delete it to start over"
        ) from exc
    if data.get("schema_sha256") != schema_sha:
        raise BenchError(f"{path}: checkpoint belongs to another schema; delete it to start over")
    return data


def import_passages(
    server: TypesenseServer,
    schema: Mapping[str, Any],
    passages: Iterable[Passage],
    *,
    checkpoint: Path,
    expected: int | None = None,
    batch_size: int = 500,
    build: DocBuilder = text_docs,
    label: str = "import",
    backoff: Backoff = DEFAULT_BACKOFF,
) -> ImportRecord:
    name = str(schema["name"])
    sha = schema_sha256(schema)
    created = ensure_collection(server, schema)
    state = None if created else _load_checkpoint(checkpoint, sha)
    if state is not None and state.get("complete") and count_documents(server, name) == state["imported"]:
        return ImportRecord(name, int(state["imported"]), False, int(state["imported"]), batch_size, 0.0)
    if state is None and not created and count_documents(server, name) > 0:
        raise BenchError(
            f"collection {name} already holds documents but there is no checkpoint {checkpoint}; "
            "delete the collection to import it again"
        )
    skip = int(state["imported"]) if state else 0
    last_id = state.get("last_docid") if state else None
    t0 = time.perf_counter()
    stream = _InOrder(passages, skip, last_id, checkpoint, name)
    stalls: list[dict[str, Any]] = []
    with Progress(label, expected, "passages", initial=skip) as progress:
        imported = skip
        for batch in _batches(stream, batch_size):
            import_batch(server, name, build(batch, imported), backoff=backoff, stalls=stalls)
            imported += len(batch)
            _write_checkpoint(checkpoint, name, sha, imported, batch[-1].docid, complete=False)
            progress.advance(len(batch))
    n = stream.read
    if n < skip:
        raise BenchError(
            f"{checkpoint}: the corpus has {n} passages, the checkpoint says {skip} were imported"
        )
    have = count_documents(server, name)
    if have != n or (expected is not None and have != expected):
        raise BenchError(
            f"collection {name} holds {have} documents after the import; {n} were read"
            + (f", the corpus should have {expected}" if expected is not None else "")
        )
    last = last_id if stream.prev is None else passages_prev_id(stream.prev)
    _write_checkpoint(checkpoint, name, sha, n, last, complete=True)
    return ImportRecord(name, n, created, skip, batch_size, time.perf_counter() - t0, tuple(stalls))


class _InOrder:
    """The corpus stream, checked to be in ascending id order as it is read. Yields the passages after the
    first ``skip`` (those a checkpoint says are in the collection already), once passage ``skip`` is the one
    the checkpoint names. ``read`` counts the passages read, ``prev`` is the last one's id key."""

    def __init__(
        self, passages: Iterable[Passage], skip: int, last_id: str | None, checkpoint: Path, name: str
    ) -> None:
        self.passages, self.skip, self.last_id = passages, skip, last_id
        self.checkpoint, self.name = checkpoint, name
        self.read = 0
        self.prev: DocidKey | None = None

    def __iter__(self) -> Iterator[Passage]:
        for p in self.passages:
            key = docid_key(p.docid)
            if self.prev is not None and key <= self.prev:
                raise BenchError(
                    f"passage {p.docid} follows {passages_prev_id(self.prev)}: the corpus is not in "
                    "ascending id order (the plan's import order, bench.data.IMPORT_ORDER); sort it before "
                    "importing"
                )
            self.prev = key
            self.read += 1
            if self.read <= self.skip:
                if self.read == self.skip and p.docid != self.last_id:
                    raise BenchError(
                        f"{self.checkpoint}: passage {self.skip} of the corpus is {p.docid}, the checkpoint "
                        f"says {self.last_id}; the corpus changed. Delete collection {self.name} and the "
                        "checkpoint."
                    )
                continue
            yield p


def _batches(passages: Iterable[Passage], size: int) -> Iterator[list[Passage]]:
    """``passages`` in lists of ``size`` (the last one shorter), each handed on as soon as it is full."""
    batch: list[Passage] = []
    for p in passages:
        batch.append(p)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _write_checkpoint(
    path: Path, name: str, sha: str, imported: int, last_docid: str | None, *, complete: bool
) -> None:
    write_json_atomic(
        path,
        {
            "collection": name,
            "schema_sha256": sha,
            "imported": imported,
            "last_docid": last_docid,
            "complete": complete,
        },
    )


def passages_prev_id(key: DocidKey) -> str:
    return format_docid_key(key)
