"""The id map of MIRACLReranking (``miracl/mmteb-miracl-reranking`` ``data/bm25/de.gz``): each query's BM25
candidates in order, read by adapter check 1 (:mod:`bench.equality.data`) and, once, by ``bench data fetch``
to report an unknown line format early. Accepts gzip JSON lines, a JSON array or a TREC run; anything else is
a BenchError naming the file and line.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.plan import passage_text
from bench.integrity.enforce import require_locked


@dataclass(frozen=True)
class IdMapEntry:
    qid: str
    query: str | None
    docids: list[str]
    texts: list[tuple[str, ...]]  # per candidate: the text forms it may appear in (empty: no text given)


def _open_text(path: Path) -> list[str]:
    if not path.is_file():
        raise BenchError(f"{path}: file missing; run `{hint('data fetch reranking-id-map')}`.")
    require_locked(path)
    with gzip.open(path, "rt", encoding="utf-8-sig") as fh:
        text = fh.read()
    if "\ufeff" in text:  # after the first byte: two files concatenated
        line = text.count("\n", 0, text.index("\ufeff")) + 1
        raise BenchError(
            f"{path}:{line}: a UTF-8 byte-order mark inside the file, not at its first byte. "
            f"Fix: fetch the file again (`{hint('data fetch reranking-id-map')}`)"
        )
    return [line for line in text.splitlines() if line.strip()]


def _doc(item: Any) -> tuple[str, tuple[str, ...]]:
    """Docid and the text forms a candidate may have in MIRACLReranking: title + "\n" + text, or the text
    alone (whitespace is normalised when matching, so "title text" matches the first form)."""
    if isinstance(item, str):
        return item, ()
    if isinstance(item, Mapping):
        for key in ("docid", "_id", "id", "doc_id", "corpus-id"):
            if key in item:
                title = str(item.get("title") or "")
                text = item.get("text")
                if text is None:
                    return str(item[key]), ()
                forms = (passage_text(title, str(text)), str(text)) if title else (str(text),)
                return str(item[key]), forms
    raise ValueError(f"candidate without a docid: {str(item)[:80]!r}")


def read_id_map(path: Path) -> list[IdMapEntry]:
    """Query id, query text (if given) and ordered candidate ids (+ texts if given) from ``de.gz``."""
    lines = _open_text(path)
    entries: list[IdMapEntry] = []
    if lines and lines[0].lstrip().startswith("["):  # one JSON array instead of JSON lines
        try:
            lines = [json.dumps(obj) for obj in json.loads("\n".join(lines))]
        except json.JSONDecodeError as exc:
            raise BenchError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if lines and lines[0].lstrip().startswith("{"):
        for n, line in enumerate(lines, 1):
            try:
                obj = json.loads(line)
                qid = next(str(obj[k]) for k in ("query_id", "qid", "query-id", "id", "_id") if k in obj)
                cands = next(obj[k] for k in ("candidates", "docs", "passages", "docids", "hits") if k in obj)
                docs = [_doc(c) for c in cands]
            except (json.JSONDecodeError, StopIteration, ValueError, TypeError) as exc:
                raise BenchError(
                    f"{path}:{n}: expected a JSON object with a query id and a candidate list ({exc!r})"
                ) from None
            query = obj.get("query")
            entries.append(
                IdMapEntry(
                    qid, None if query is None else str(query), [d for d, _ in docs], [t for _, t in docs]
                )
            )
        return entries
    by_qid: dict[str, list[tuple[int, str]]] = {}
    for n, line in enumerate(lines, 1):
        parts = line.split()
        if len(parts) != 6 or not parts[3].lstrip("-").isdigit():
            raise BenchError(f"{path}:{n}: neither JSON lines nor a 6-column TREC run line: {line[:80]!r}")
        by_qid.setdefault(parts[0], []).append((int(parts[3]), parts[2]))
    return [
        IdMapEntry(q, None, [d for _, d in sorted(ranked)], [()] * len(ranked))
        for q, ranked in by_qid.items()
    ]
