"""Loaders for the plan's pinned hub files (plan section "Data"), in the hub layouts.

Snapshot folders are ``bench.integrity.hub.snapshot_dir(source)`` (``<hub_dir>/<owner>/<name>@<revision>``).

- 71k corpus, ``mteb/MIRACLRetrievalHardNegatives``: ``de-corpus/dev-00000-of-00001.parquet`` with an id
  column, ``title`` and ``text`` (the BEIR/MTEB retrieval layout). The file path is confirmed for this
  revision by a public download manifest; older mteb uploads name the id column ``_id``, later ones ``id``
  (public fetch scripts), so both are accepted and ``corpus_71k_id_column`` says which one the file has
  (recorded with every first-stage result). Loaded whole (71,277 rows) and sorted into import order.
- full corpus, ``miracl/miracl-corpus``: exactly 32 shards ``miracl-corpus-v1.0-de/docs-0.jsonl.gz`` ...
  ``docs-31.jsonl.gz`` (public code pinned to this revision), one JSON object ``{"docid", "title",
  "text"}`` per line (MIRACL README); 15,866,222 passages in all (counted when the lock is written,
  ``bench.integrity.hub``). Streamed shard by shard in numeric shard order, never held in memory; a
  malformed line raises naming file and line.
- topics and qrels, ``miracl/miracl``: ``bench.data.miracl``.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path

from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.data import Passage, sort_passages
from bench.data.layout import (
    CORPUS_71K_COLUMNS,
    CORPUS_71K_FILE,
    CORPUS_71K_ID_COLUMNS,
    CORPUS_FULL_DIR,
    CORPUS_FULL_KEYS,
    CORPUS_FULL_SHARDS,
)
from bench.integrity.enforce import require_locked

_SHARD = re.compile(r"^docs-(\d+)\.jsonl\.gz$")


def corpus_71k_id_column(snapshot: Path) -> str:
    """The id column the 71k corpus file has (``_id`` or ``id``); raises naming the columns found."""
    path = snapshot / CORPUS_71K_FILE
    if not path.is_file():
        raise BenchError(f"{path}: 71k corpus file missing; run `{hint('data fetch')}` (expected hub layout)")
    require_locked(path)
    try:
        # lazy: pyarrow is heavy; only when parquet is read
        import pyarrow.parquet as pq
    except ModuleNotFoundError as exc:
        raise BenchError("reading the 71k corpus needs pyarrow: `uv sync`") from exc
    names = pq.ParquetFile(path).schema_arrow.names
    ids = [c for c in CORPUS_71K_ID_COLUMNS if c in names]
    missing = [c for c in CORPUS_71K_COLUMNS if c not in names]
    if len(ids) != 1 or missing:
        need = " or ".join(CORPUS_71K_ID_COLUMNS)
        what = f"lack {missing}" if missing else f"have {len(ids)} id columns"
        raise BenchError(
            f"{path}: columns {names} {what}; expected exactly one of {need} plus {list(CORPUS_71K_COLUMNS)} "
            "(the MTEB layout). The hub layout differs from the one this loader was written for: adapt "
            "bench/data/hub.py."
        )
    return ids[0]


def read_corpus_71k(snapshot: Path) -> list[Passage]:
    """All passages of the 71k corpus in import order (ascending MIRACL id)."""
    # lazy: pyarrow is heavy; only when parquet is read
    import pyarrow.parquet as pq

    path = snapshot / CORPUS_71K_FILE
    id_column = corpus_71k_id_column(snapshot)
    columns = (id_column, *CORPUS_71K_COLUMNS)
    table = pq.read_table(path, columns=list(columns)).to_pydict()
    out: list[Passage] = []
    for row, (docid, title, text) in enumerate(zip(*(table[c] for c in columns), strict=True), 1):
        if not isinstance(docid, str) or not docid or not isinstance(text, str):
            raise BenchError(
                f"{path}: row {row}: {id_column} and text must be non-empty strings, got {docid!r}"
            )
        out.append(Passage(docid, title if isinstance(title, str) else "", text))
    return sort_passages(out)


def corpus_full_shards(snapshot: Path) -> list[Path]:
    """The German shards in numeric order (docs-0, docs-1, ..., docs-10, ...)."""
    folder = snapshot / CORPUS_FULL_DIR
    if not folder.is_dir():
        raise BenchError(
            f"{folder}: full-corpus folder missing; run `{hint('data fetch')}` (expected hub layout)"
        )
    shards = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _SHARD.match(p.name))]
    if not shards:
        raise BenchError(f"{folder}: no docs-<N>.jsonl.gz shards")
    numbers = sorted(n for n, _ in shards)
    if numbers != list(range(CORPUS_FULL_SHARDS)):
        absent = sorted(set(range(CORPUS_FULL_SHARDS)) - set(numbers))
        extra = sorted(set(numbers) - set(range(CORPUS_FULL_SHARDS)))
        raise BenchError(
            f"{folder}: {len(numbers)} shards; the German corpus has exactly {CORPUS_FULL_SHARDS} "
            f"(docs-0 ... docs-{CORPUS_FULL_SHARDS - 1}.jsonl.gz); missing: "
            f"{', '.join(f'docs-{n}' for n in absent) or 'none'}; unexpected: "
            f"{', '.join(f'docs-{n}' for n in extra) or 'none'}. Run `{hint('data fetch corpus-full')}`."
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
            if not isinstance(obj, dict) or not all(isinstance(obj.get(k), str) for k in CORPUS_FULL_KEYS):
                raise BenchError(f"{path}:{lineno}: expected an object with string fields docid, title, text")
            yield Passage(obj["docid"], obj["title"], obj["text"])


def iter_corpus_full(snapshot: Path) -> Iterator[Passage]:
    """Stream the full German corpus, shard after shard (bounded memory)."""
    for shard in corpus_full_shards(snapshot):
        yield from iter_jsonl_gz(require_locked(shard))
