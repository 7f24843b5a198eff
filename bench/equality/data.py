"""Input of adapter check 1: the first 20 MIRACLReranking (de) queries with their 100 fixed candidates.

Plan: Data ("input for adapter equality tests only") and Adapter checks 1. Texts are used as provided by
``mteb/MIRACLReranking``: its corpus ``text`` already reads "Title Text", so a ``title`` column is never
prefixed to a text that already starts with it (a non-empty title the text does not start with is joined
by the plan's rule title + "\\n" + text; both cases are counted in the record). Ids are mapped back to
MIRACL query and passage ids, so result files carry MIRACL ids only (never texts), in one of two ways
(recorded as ``id_map_method``):

- ``de.gz``: ``miracl/mmteb-miracl-reranking`` ``data/bm25/de.gz`` lists each query's BM25 candidates. A
  MIRACLReranking passage id ``candidate_dev_query521_00010`` carries its 0-based BM25 position as suffix:
  the candidate is the ``de.gz`` entry at that position, and its text (where ``de.gz`` has one) is only a
  check. An id without that suffix is matched by text; an ambiguous or failed match is an error naming the
  query and position. ``read_id_map`` accepts gzip JSON lines, a JSON array or a TREC run; anything else is
  a BenchError naming the file (the per-line format of ``de.gz`` could not be seen anywhere).
- ``corpus``: no ``de.gz`` needed. The candidate texts of the 20 queries are matched against the full MIRACL
  corpus (``title + " " + text``, whitespace normalised) in one streamed pass; the record says how many
  matched uniquely, and any candidate that matched no passage or several is an error naming it.

Layouts (bench/integrity/hub.py says how far each was confirmed): ``mteb/MIRACLReranking``: ``de-queries``,
``de-corpus``, ``de-top_ranked`` each with ``dev-00000-of-00001.parquet``; queries ``_id``/``id`` + ``text``;
corpus ``_id``/``id`` + ``text`` (+ ``title``); top_ranked ``query-id`` + ``corpus-ids`` (candidate order).
The row order of ``de-queries`` defines "the first 20".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.plan import EQUALITY_CANDIDATES, EQUALITY_QUERIES, LANGUAGE, passage_text
from bench.core.progress import Progress
from bench.data import Passage
from bench.data.id_map import IdMapEntry
from bench.data.layout import RERANKING_ID_COLUMNS as ID_COLUMNS
from bench.data.layout import RERANKING_TOP_DOCS_COLUMNS as TOP_DOCS_COLUMNS
from bench.data.layout import RERANKING_TOP_QUERY_COLUMNS as TOP_QUERY_COLUMNS
from bench.integrity.enforce import require_locked

PARQUET = "dev-00000-of-00001.parquet"
ID_MAP_METHODS = ("de.gz", "corpus")
_POSITION = re.compile(r"^candidate_.+_(\d+)$")  # candidate_dev_query521_00010: BM25 position 10


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
        raise BenchError(
            f"{path}: file missing; run `{hint('data fetch reranking')}` (pinned MIRACLReranking)."
        )
    require_locked(path)
    # lazy: pyarrow is heavy; only when parquet is read
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    return rows


def _col(row: Mapping[str, Any], names: tuple[str, ...], where: Path) -> Any:
    for name in names:
        if name in row:
            return row[name]
    raise BenchError(f"{where}: expected one of the columns {names}, found {sorted(row)}")


@dataclass(frozen=True)
class RerankingRows:
    """The first queries of MIRACLReranking: (source qid, query, source docids, passage texts) each, and how
    many candidate texts already held their title (``title_in_text``) or got it joined (``title_joined``)."""

    rows: list[tuple[str, str, list[str], list[str]]]
    text_rule: Mapping[str, int]


def reranking_text(title: str, text: str) -> tuple[str, str]:
    """(passage text, rule) of a MIRACLReranking corpus row: never prefix a title the text starts with."""
    if not title:
        return text, "no_title"
    if _norm(text).startswith(_norm(title)):
        return text, "title_in_text"
    return passage_text(title, text), "title_joined"


def load_reranking(
    snapshot: Path, *, n_queries: int = EQUALITY_QUERIES, n_candidates: int = EQUALITY_CANDIDATES
) -> RerankingRows:
    """The first ``n_queries`` queries with their first ``n_candidates`` candidates, texts as provided."""
    qpath = snapshot / f"{LANGUAGE}-queries" / PARQUET
    tpath = snapshot / f"{LANGUAGE}-top_ranked" / PARQUET
    cpath = snapshot / f"{LANGUAGE}-corpus" / PARQUET
    queries = _read_parquet(qpath)[:n_queries]
    if len(queries) < n_queries:
        raise BenchError(f"{qpath}: {len(queries)} queries, the check needs the first {n_queries}")
    top: dict[str, list[str]] = {}
    for row in _read_parquet(tpath):
        top[str(_col(row, TOP_QUERY_COLUMNS, tpath))] = [str(d) for d in _col(row, TOP_DOCS_COLUMNS, tpath)]
    wanted = {str(_col(q, ID_COLUMNS, qpath)) for q in queries}
    needed = {d for qid in wanted for d in top.get(qid, [])[:n_candidates]}
    texts: dict[str, str] = {}
    rule = {"no_title": 0, "title_in_text": 0, "title_joined": 0}
    for row in _read_parquet(cpath):
        did = str(_col(row, ID_COLUMNS, cpath))
        if did in needed:
            texts[did], how = reranking_text(str(row.get("title") or ""), str(_col(row, ("text",), cpath)))
            rule[how] += 1
    out = []
    for q in queries:
        qid = str(_col(q, ID_COLUMNS, qpath))
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
    return RerankingRows(out, rule)


def _norm(text: str) -> str:
    return " ".join(text.split())


def candidate_position(source_docid: str) -> int | None:
    """The 0-based BM25 position a MIRACLReranking passage id carries (``candidate_..._00010`` -> 10)."""
    m = _POSITION.match(source_docid)
    return int(m.group(1)) if m else None


def _find_query(
    source_qid: str,
    query: str,
    by_qid: Mapping[str, IdMapEntry],
    by_text: Mapping[str, IdMapEntry],
    topic_by_text: Mapping[str, str],
    id_map_path: Path,
) -> tuple[IdMapEntry, str]:
    entry = by_qid.get(source_qid)
    if entry is not None:
        return entry, "query_by_id"
    entry = by_text.get(_norm(query))
    if entry is None and _norm(query) in topic_by_text:
        entry = by_qid.get(topic_by_text[_norm(query)])
    if entry is None:
        raise BenchError(
            f"{id_map_path}: MIRACLReranking query {source_qid!r} ({query[:60]!r}) matches no "
            "query id or text there or in the MIRACL de dev topics; the id map cannot be applied."
        )
    return entry, "query_by_text"


def _map_candidate(entry: IdMapEntry, i: int, source_docid: str, passage: str, where: str) -> tuple[str, str]:
    """(MIRACL docid, how) of candidate ``i``: by the position its id carries (text as a check), else by
    text (exactly one docid), else by list order where ``de.gz`` has no texts at all."""
    pos = candidate_position(source_docid)
    if pos is not None:
        if pos >= len(entry.docids):
            raise BenchError(
                f"{where}: query {entry.qid}, position {pos} ({source_docid!r}): the id map lists only "
                f"{len(entry.docids)} candidates for this query."
            )
        forms = entry.texts[pos]
        if not forms:
            return entry.docids[pos], "docs_by_position"
        if _norm(passage) not in {_norm(f) for f in forms}:
            raise BenchError(
                f"{where}: query {entry.qid}, position {pos} ({source_docid!r}): the id map's passage "
                f"{entry.docids[pos]!r} there has another text than MIRACLReranking's; the position "
                "suffix and the id map disagree."
            )
        return entry.docids[pos], "docs_by_position_text_checked"
    if not any(entry.texts):
        if i >= len(entry.docids):
            raise BenchError(f"{where}: query {entry.qid}, position {i}: no candidate at that position.")
        return entry.docids[i], "docs_by_list_order"
    hits = {
        d for d, forms in zip(entry.docids, entry.texts, strict=True) if _norm(passage) in map(_norm, forms)
    }
    if len(hits) != 1:
        what = "no passage" if not hits else f"{len(hits)} passages ({', '.join(sorted(hits)[:3])})"
        raise BenchError(
            f"{where}: query {entry.qid}, position {i} ({source_docid!r}): its text matches {what} "
            "there; the id map cannot be applied unambiguously."
        )
    return hits.pop(), "docs_by_text"


def _distinct(qid: str, docids: list[str], where: str) -> None:
    seen: dict[str, int] = {}
    for i, d in enumerate(docids):
        if d in seen:
            raise BenchError(
                f"{where}: query {qid}: positions {seen[d]} and {i} both map to passage {d!r}; "
                "two candidates cannot be one passage."
            )
        seen[d] = i


def build_equality_set(
    reranking: RerankingRows,
    id_map: list[IdMapEntry],
    topics: Mapping[str, str],
    *,
    id_map_path: Path,
) -> EqualitySet:
    """Attach MIRACL ids to the MIRACLReranking rows through ``de.gz`` (``id_map_method`` "de.gz").

    The query is found by its MIRACLReranking id if that is a MIRACL id, else by its text (in ``de.gz`` if the
    file carries query texts, else in the MIRACL ``topics``). Candidates: ``_map_candidate``.
    """
    by_qid = {e.qid: e for e in id_map}
    by_text = {_norm(e.query): e for e in id_map if e.query}
    topic_by_text = {_norm(t): q for q, t in topics.items()}
    out: list[EqualityQuery] = []
    matched = dict.fromkeys(
        (
            "query_by_id",
            "query_by_text",
            "docs_by_position_text_checked",
            "docs_by_position",
            "docs_by_text",
            "docs_by_list_order",
        ),
        0,
    )
    for source_qid, query, source_docids, passages in reranking.rows:
        entry, how = _find_query(source_qid, query, by_qid, by_text, topic_by_text, id_map_path)
        matched[how] += 1
        docids: list[str] = []
        for i, (source_docid, passage) in enumerate(zip(source_docids, passages, strict=True)):
            did, how = _map_candidate(entry, i, source_docid, passage, str(id_map_path))
            matched[how] += 1
            docids.append(did)
        _distinct(entry.qid, docids, str(id_map_path))
        out.append(
            EqualityQuery(entry.qid, query, tuple(docids), tuple(passages), source_qid, tuple(source_docids))
        )
    provenance = {
        "id_map_method": "de.gz",
        "id_map_matching": matched,
        "text_rule": dict(reranking.text_rule),
    }
    return EqualitySet(tuple(out), provenance)


def build_equality_set_from_corpus(
    reranking: RerankingRows,
    corpus: Iterable[Passage],
    topics: Mapping[str, str],
    *,
    corpus_label: str,
    total: int | None = None,
) -> EqualitySet:
    """Attach MIRACL ids without ``de.gz`` (``id_map_method`` "corpus"): one streamed pass over the corpus.

    Queries are found by their text in the MIRACL de dev ``topics`` (or by id if the source id is a MIRACL
    id); each candidate text must equal exactly one corpus passage's ``title + " " + text`` (whitespace
    normalised). Any candidate matching none or several is an error naming query and position.
    """
    topic_by_text = {_norm(t): q for q, t in topics.items()}
    wanted: dict[str, set[str]] = {}
    for _, _, _, passages in reranking.rows:
        for passage in passages:
            wanted.setdefault(_norm(passage), set())
    with Progress("id map from the full corpus", total, "passages", interval=10.0) as progress:
        for p in corpus:
            hits = wanted.get(_norm(f"{p.title} {p.text}"))
            if hits is not None and len(hits) < 3:  # two are enough to call it ambiguous
                hits.add(p.docid)
            progress.advance()
    unique = sum(1 for _, _, _, ps in reranking.rows for t in ps if len(wanted[_norm(t)]) == 1)
    candidates = sum(len(ps) for _, _, _, ps in reranking.rows)
    counts = {"candidates": candidates, "matched_uniquely": unique}
    out: list[EqualityQuery] = []
    for source_qid, query, source_docids, passages in reranking.rows:
        qid = source_qid if source_qid in topics else topic_by_text.get(_norm(query))
        if qid is None:
            raise BenchError(
                f"MIRACLReranking query {source_qid!r} ({query[:60]!r}) matches no MIRACL de dev topic by id "
                "or text; the corpus id map cannot be applied."
            )
        docids = []
        for i, (source_docid, passage) in enumerate(zip(source_docids, passages, strict=True)):
            hits = wanted[_norm(passage)]
            if len(hits) != 1:
                what = "no passage" if not hits else f"several passages ({', '.join(sorted(hits))})"
                raise BenchError(
                    f"{corpus_label}: query {qid}, position {i} ({source_docid!r}): its text matches {what} "
                    f"of the corpus ({unique} of {candidates} candidates matched uniquely); the corpus id "
                    "map cannot be applied. Use the de.gz id map (`--id-map de.gz`)."
                )
            docids.append(next(iter(hits)))
        _distinct(qid, docids, corpus_label)
        out.append(
            EqualityQuery(qid, query, tuple(docids), tuple(passages), source_qid, tuple(source_docids))
        )
    provenance = {
        "id_map_method": "corpus",
        "id_map_matching": counts,
        "text_rule": dict(reranking.text_rule),
    }
    return EqualitySet(tuple(out), provenance)
