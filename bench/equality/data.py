"""Input of adapter check 1: the first 20 MIRACLReranking (de) queries with their 100 fixed candidates.

Plan: Data ("input for adapter equality tests only") and Adapter checks 1. Texts are used as provided by
``mteb/MIRACLReranking`` (a non-empty ``title`` column is joined by the plan's rule title + "\\n" + text);
ids are mapped back to MIRACL query and passage ids through ``miracl/mmteb-miracl-reranking``
``data/bm25/de.gz``, so result files carry MIRACL ids only (never texts).

Layouts (the hub cannot be reached here; see bench/integrity/hub.py for how far each was confirmed):
``mteb/MIRACLReranking``: ``de-queries``, ``de-corpus``, ``de-top_ranked`` each with
``dev-00000-of-00001.parquet``; mteb's retrieval-format columns: queries ``_id``/``id`` + ``text``; corpus
``_id``/``id`` + ``text`` (+ ``title``); top_ranked ``query-id`` + ``corpus-ids`` (candidate order). The
row order of ``de-queries`` defines "the first 20". NOT confirmed here: the exact column names (``id`` and
``_id`` are both accepted) and the format of ``de.gz``; ``read_id_map`` accepts gzip JSON lines (one query per
line with id, text and a candidate list) and a gzip TREC run; anything else is a BenchError naming the file.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.errors import BenchError
from bench.integrity.coverage import require_locked
from bench.plan import EQUALITY_CANDIDATES, EQUALITY_QUERIES, LANGUAGE, passage_text

PARQUET = "dev-00000-of-00001.parquet"


@dataclass(frozen=True)
class EqualityQuery:
    qid: str  # MIRACL query id
    query: str
    docids: tuple[str, ...]  # MIRACL passage ids, first-stage (BM25) order
    passages: tuple[str, ...]  # texts as provided, same order
    source_qid: str = ""  # MIRACLReranking ids, for the record
    source_docids: tuple[str, ...] = ()


@dataclass(frozen=True)
class EqualitySet:
    queries: tuple[EqualityQuery, ...]
    provenance: Mapping[str, Any] = field(default_factory=dict)


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise BenchError(f"{path}: file missing; run `bench data fetch reranking` (pinned MIRACLReranking).")
    require_locked(path)
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    return rows


def _col(row: Mapping[str, Any], names: tuple[str, ...], where: Path) -> Any:
    for name in names:
        if name in row:
            return row[name]
    raise BenchError(f"{where}: expected one of the columns {names}, found {sorted(row)}")


def load_reranking(
    snapshot: Path, *, n_queries: int = EQUALITY_QUERIES, n_candidates: int = EQUALITY_CANDIDATES
) -> list[tuple[str, str, list[str], list[str]]]:
    """[(source qid, query, source docids, passage texts)] for the first ``n_queries`` queries."""
    qpath = snapshot / f"{LANGUAGE}-queries" / PARQUET
    tpath = snapshot / f"{LANGUAGE}-top_ranked" / PARQUET
    cpath = snapshot / f"{LANGUAGE}-corpus" / PARQUET
    queries = _read_parquet(qpath)[:n_queries]
    if len(queries) < n_queries:
        raise BenchError(f"{qpath}: {len(queries)} queries, the check needs the first {n_queries}")
    top: dict[str, list[str]] = {}
    for row in _read_parquet(tpath):
        top[str(_col(row, ("query-id", "query_id", "qid"), tpath))] = [
            str(d) for d in _col(row, ("corpus-ids", "corpus_ids"), tpath)
        ]
    wanted = {str(_col(q, ("_id", "id"), qpath)) for q in queries}
    needed = {d for qid in wanted for d in top.get(qid, [])}
    texts: dict[str, str] = {}
    for row in _read_parquet(cpath):
        did = str(_col(row, ("_id", "id"), cpath))
        if did in needed:
            title = str(row.get("title") or "")
            text = str(_col(row, ("text",), cpath))
            texts[did] = passage_text(title, text) if title else text
    out = []
    for q in queries:
        qid = str(_col(q, ("_id", "id"), qpath))
        cands = top.get(qid)
        if cands is None:
            raise BenchError(f"{tpath}: no candidate list for query {qid!r}")
        if len(cands) < n_candidates:
            raise BenchError(
                f"{tpath}: query {qid!r} has {len(cands)} candidates, the check needs {n_candidates}"
            )
        cands = cands[:n_candidates]
        missing = [d for d in cands if d not in texts]
        if missing:
            raise BenchError(
                f"{cpath}: {len(missing)} candidates of query {qid!r} missing, e.g. {missing[0]!r}"
            )
        out.append((qid, str(_col(q, ("text",), qpath)), cands, [texts[d] for d in cands]))
    return out


@dataclass(frozen=True)
class IdMapEntry:
    qid: str
    query: str | None
    docids: list[str]
    texts: list[tuple[str, ...]]  # per candidate: the text forms it may appear in (empty: no text given)


def _open_text(path: Path) -> list[str]:
    if not path.is_file():
        raise BenchError(f"{path}: file missing; run `bench data fetch reranking-id-map`.")
    require_locked(path)
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [line for line in fh.read().splitlines() if line.strip()]


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


def _norm(text: str) -> str:
    return " ".join(text.split())


def build_equality_set(
    rows: list[tuple[str, str, list[str], list[str]]],
    id_map: list[IdMapEntry],
    topics: Mapping[str, str],
    *,
    id_map_path: Path,
) -> EqualitySet:
    """Attach MIRACL ids to the MIRACLReranking rows.

    The query is found by its MIRACLReranking id if that is a MIRACL id, else by its text (in ``de.gz`` if the
    file carries query texts, else in the MIRACL ``topics``). Candidates are matched by text where ``de.gz``
    carries texts, else by position (recorded as such).
    """
    by_qid = {e.qid: e for e in id_map}
    by_text = {_norm(e.query): e for e in id_map if e.query}
    topic_by_text = {_norm(t): q for q, t in topics.items()}
    out: list[EqualityQuery] = []
    matched = {"query_by_id": 0, "query_by_text": 0, "docs_by_text": 0, "docs_by_position": 0}
    for source_qid, query, source_docids, passages in rows:
        entry = by_qid.get(source_qid)
        if entry is not None:
            matched["query_by_id"] += 1
        else:
            entry = by_text.get(_norm(query))
            if entry is None and _norm(query) in topic_by_text:
                entry = by_qid.get(topic_by_text[_norm(query)])
            if entry is None:
                raise BenchError(
                    f"{id_map_path}: MIRACLReranking query {source_qid!r} ({query[:60]!r}) matches no "
                    "query id or text there or in the MIRACL de dev topics; the id map cannot be applied."
                )
            matched["query_by_text"] += 1
        docids: list[str] = []
        text_to_id = {_norm(t): d for d, forms in zip(entry.docids, entry.texts, strict=True) for t in forms}
        for i, passage in enumerate(passages):
            did = text_to_id.get(_norm(passage))
            if did is not None:
                matched["docs_by_text"] += 1
            elif not text_to_id and i < len(entry.docids):
                did = entry.docids[i]
                matched["docs_by_position"] += 1
            else:
                raise BenchError(
                    f"{id_map_path}: candidate {i} of query {entry.qid} ({source_docids[i]!r}) has no "
                    f"MIRACL id there ({len(entry.docids)} candidates listed)."
                )
            docids.append(did)
        out.append(
            EqualityQuery(entry.qid, query, tuple(docids), tuple(passages), source_qid, tuple(source_docids))
        )
    return EqualitySet(tuple(out), {"id_map_matching": matched})
