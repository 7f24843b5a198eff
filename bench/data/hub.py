"""Loaders for the plan's pinned hub files (plan section "Data"), in the hub layouts.

Snapshot folders are ``bench.integrity.hub.snapshot_dir(source)`` (``<hub_dir>/<owner>/<name>@<revision>``).

- 71k corpus, ``mteb/MIRACLRetrievalHardNegatives``: ``de-corpus/dev-00000-of-00001.parquet`` with columns
  ``_id``, ``title``, ``text`` (the BEIR/MTEB retrieval layout). The file path is confirmed for this
  revision by a public download manifest; the column names are the MTEB convention and are NOT confirmed
  for this revision: the loader accepts only that layout and otherwise fails naming the columns it found.
  Loaded whole (71,277 rows) and sorted into import order.
- full corpus, ``miracl/miracl-corpus``: ``miracl-corpus-v1.0-de/docs-<N>.jsonl.gz``, one JSON object
  ``{"docid", "title", "text"}`` per line (MIRACL README). Streamed shard by shard in numeric shard order,
  never held in memory; a malformed line raises naming file and line.
- topics and qrels, ``miracl/miracl``: ``bench.data.miracl``.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path

from bench.data import Passage, sort_passages
from bench.errors import BenchError
from bench.integrity.coverage import require_locked

CORPUS_71K_FILE = "de-corpus/dev-00000-of-00001.parquet"
CORPUS_71K_COLUMNS = ("_id", "title", "text")
CORPUS_FULL_DIR = "miracl-corpus-v1.0-de"
_KEYS = ("docid", "title", "text")
_SHARD = re.compile(r"^docs-(\d+)\.jsonl\.gz$")


def read_corpus_71k(snapshot: Path) -> list[Passage]:
    """All passages of the 71k corpus in import order (ascending MIRACL id)."""
    path = snapshot / CORPUS_71K_FILE
    if not path.is_file():
        raise BenchError(f"{path}: 71k corpus file missing; run `bench data fetch` (expected hub layout)")
    require_locked(path)
    try:
        import pyarrow.parquet as pq
    except ModuleNotFoundError as exc:
        raise BenchError("reading the 71k corpus needs pyarrow: `uv sync`") from exc
    names = pq.ParquetFile(path).schema_arrow.names
    missing = [c for c in CORPUS_71K_COLUMNS if c not in names]
    if missing:
        raise BenchError(
            f"{path}: columns {names} lack {missing}; expected the MTEB layout {CORPUS_71K_COLUMNS}. "
            "The hub layout differs from the one this loader was written for: adapt bench/data/hub.py."
        )
    table = pq.read_table(path, columns=list(CORPUS_71K_COLUMNS)).to_pydict()
    out: list[Passage] = []
    for row, (docid, title, text) in enumerate(zip(*(table[c] for c in CORPUS_71K_COLUMNS), strict=True), 1):
        if not isinstance(docid, str) or not docid or not isinstance(text, str):
            raise BenchError(f"{path}: row {row}: _id and text must be non-empty strings, got {docid!r}")
        out.append(Passage(docid, title if isinstance(title, str) else "", text))
    return sort_passages(out)


def corpus_full_shards(snapshot: Path) -> list[Path]:
    """The German shards in numeric order (docs-0, docs-1, ..., docs-10, ...)."""
    folder = snapshot / CORPUS_FULL_DIR
    if not folder.is_dir():
        raise BenchError(
            f"{folder}: full-corpus folder missing; run `bench data fetch` (expected hub layout)"
        )
    shards = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _SHARD.match(p.name))]
    if not shards:
        raise BenchError(f"{folder}: no docs-<N>.jsonl.gz shards")
    numbers = sorted(n for n, _ in shards)
    if numbers != list(range(len(numbers))):
        raise BenchError(
            f"{folder}: shard numbers {numbers[:5]}... are not 0..{len(numbers) - 1}; a shard is missing"
        )
    return [p for _, p in sorted(shards)]


def iter_jsonl_gz(path: Path) -> Iterator[Passage]:
    """Passages of one MIRACL corpus shard; a malformed line raises with file and line number."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BenchError(
                    f"{path}:{lineno}: not valid JSON ({exc.msg}); the shard is damaged"
                ) from exc
            if not isinstance(obj, dict) or not all(
                isinstance(obj.get(k), str) for k in ("docid", "title", "text")
            ):
                raise BenchError(f"{path}:{lineno}: expected an object with string fields docid, title, text")
            yield Passage(obj["docid"], obj["title"], obj["text"])


def iter_corpus_full(snapshot: Path) -> Iterator[Passage]:
    """Stream the full German corpus, shard after shard (bounded memory)."""
    for shard in corpus_full_shards(snapshot):
        yield from iter_jsonl_gz(require_locked(shard))
