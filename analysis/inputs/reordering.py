"""The reordering invariant (plan section "Quality"): a reranked run reorders its stage's
frozen first-stage candidates and nothing else.

The plan fixes the candidates ("every reranker on keyword-71k, ... depth 100"), and its depth rule:
"Pointwise depths 20 and 50 are derived from the same scores (only the first k candidates are reordered);
jina is run separately per depth". bench writes a depth-k run as the first k candidates reordered, then the
candidates k+1..100 in first-stage order (``bench.quality.depths.ranking_at_depth``). So a reranked run at
depth k holds, for every query it has:

* exactly the query's candidates: the first :data:`analysis.core.plan.QUALITY_DEPTH` ranks of the first-stage
run
  (all of them when the first stage found fewer), no id foreign, missing or repeated;
* at ranks 1..k a reordering of the first stage's ranks 1..k (a candidate from beyond k in the top k breaks
  it as surely as a foreign id);
* at ranks after k the first stage's candidates in its order.

A query of the reranked run that the first stage lacks holds only foreign ids. A query of the first stage
that the reranked run lacks is not a break of this rule: that run is incomplete, which
``analysis.reporting.study``
records and words as "not rated".

:func:`reordering_break` checks one run against its first stage on whole columns (numpy and pyarrow, no
Python loop over rows); :func:`check_reordering` raises the one-line :class:`TrecFormatError` that
``analysis report`` and ``bench audit`` print: the file and line, the query, the id and its rank, the fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from analysis.core.plan import QUALITY_DEPTH
from analysis.inputs.trec import RunTable, TrecFormatError, read_fast_or_none, reference_table

if TYPE_CHECKING:
    import pyarrow as pa

    from analysis.inputs.trec_fast import FastRun

__all__ = [
    "CandidateIndex",
    "RankedIds",
    "ReorderingBreak",
    "check_reordering",
    "check_run_files",
    "name_codes",
    "read_ids",
    "reordering_break",
]

RERANKED_KIND = "reranked run file"
FIX = (
    "rerank the stage's committed first-stage run again (bench quality writes only its candidates), or "
    "restore the run file the study wrote"
)


@dataclass(frozen=True)
class RankedIds:
    """The ids of a run in rank order: queries sorted by qid, query i holds rows offsets[i]:offsets[i + 1],
    the docid of a row is ``names[codes[row]]`` (``names``: the file's distinct docids)."""

    qids: tuple[str, ...]
    offsets: np.ndarray  # int64, len(qids) + 1
    names: pa.Array  # string
    codes: np.ndarray  # int64, one per row

    @classmethod
    def of_fast(cls, run: FastRun) -> RankedIds:
        return cls(run.qids, run.offsets, run.doc_names, run.doc_codes)

    @classmethod
    def of_table(cls, table: RunTable) -> RankedIds:
        # heavy: imported where used, as analysis.inputs.trec does (`bench` starts without it)
        import pyarrow as pa

        encoded = pa.array(table.docids, type=pa.string()).dictionary_encode()
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        return cls(table.qids, table.offsets, encoded.dictionary, codes)

    def docid(self, row: int) -> str:
        return str(self.names[int(self.codes[row])].as_py())


def read_ids(path: Path) -> RankedIds:
    """A run file's ids (validated as every run is: :mod:`analysis.inputs.trec`); queries need not be in a
    qrels."""
    data = path.read_bytes()
    fast = read_fast_or_none(data, qrels_qids=None, allow_unknown_queries=True)
    if fast is not None:
        return RankedIds.of_fast(fast)
    return RankedIds.of_table(reference_table(path, data, "", allow_unknown_queries=True))


@dataclass(frozen=True)
class ReorderingBreak:
    """The first place where a run breaks the invariant: query, rank (None: a candidate is missing), the
    offending id, and why."""

    qid: str
    rank: int | None
    docid: str
    why: str


def _positions(ids: RankedIds) -> tuple[np.ndarray, np.ndarray]:
    """(query index, 0-based position within its query) of every row."""
    counts = np.diff(ids.offsets)
    query = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    return query, np.arange(ids.codes.size, dtype=np.int64) - np.repeat(ids.offsets[:-1], counts)


@dataclass(frozen=True)
class CandidateIndex:
    """A first-stage run's candidates, indexed once for every run of its stage: the row of each (query, id)
    among the first ``depth`` ranks of each query."""

    ids: RankedIds
    depth: int
    query: np.ndarray  # query index of each first-stage row
    pos: np.ndarray  # 0-based position of each row within its query
    candidates: np.ndarray  # candidates per query: min(rows, depth)
    row_of_code: np.ndarray  # the one candidate row of an id that is a candidate of one query only, else -1
    keys: np.ndarray  # sorted query * len(names) + code of every candidate row (ids of several queries)
    key_rows: np.ndarray  # the row of each key

    @classmethod
    def of(cls, ids: RankedIds, depth: int = QUALITY_DEPTH) -> CandidateIndex:
        query, pos = _positions(ids)
        rows = np.flatnonzero(pos < depth)
        n_names = max(len(ids.names), 1)
        codes = ids.codes[rows]
        once = np.bincount(codes, minlength=n_names) == 1
        row_of_code = np.full(n_names, -1, dtype=np.int64)
        row_of_code[codes[once[codes]]] = rows[once[codes]]
        keys = query[rows] * n_names + codes  # unique: an id appears once per query
        order = np.argsort(keys, kind="stable")
        return cls(
            ids,
            depth,
            query,
            pos,
            np.minimum(np.diff(ids.offsets), depth),
            row_of_code,
            keys[order],
            rows[order],
        )


def name_codes(first: RankedIds, runs: Sequence[RankedIds]) -> list[np.ndarray]:
    """For each run, the code in ``first.names`` of each of its distinct ids (-1: not in the first stage).
    One lookup for all runs of a stage: pyarrow builds its hash table of the first stage's ids once. A run
    whose ids are coded in ``first.names`` itself (the report's reading codes a reranked run's ids in its
    first stage's: :func:`analysis.inputs.trec_fast.coded_runs`) needs none."""
    others = [r for r in runs if r.names is not first.names]
    if not others:
        return [np.arange(len(first.names), dtype=np.int64) for _ in runs]
    import pyarrow as pa  # heavy: imported where used (analysis.inputs.trec's rule)
    import pyarrow._compute as pcf  # heavy, as above (not pyarrow.compute: its import costs 0.1 s)

    from analysis.inputs.trec_fast import numpy_of  # pyarrow, as above

    names = pa.chunked_array([r.names for r in others], type=pa.string())
    found = pcf.call_function("index_in", [names], pcf.SetLookupOptions(first.names))
    flat = numpy_of(found, null=-1).astype(np.int64)
    looked_up = iter(np.split(flat, np.cumsum([len(r.names) for r in others])[:-1]))
    identity = np.arange(len(first.names), dtype=np.int64)
    return [identity if r.names is first.names else next(looked_up) for r in runs]


def reordering_break(
    first: RankedIds | CandidateIndex,
    run: RankedIds,
    k: int,
    depth: int = QUALITY_DEPTH,
    *,
    codes: np.ndarray | None = None,
) -> ReorderingBreak | None:
    """Where ``run`` (a reranked run at depth ``k``) breaks the invariant against ``first`` (its stage's
    first-stage run, or its :class:`CandidateIndex`), or None. The first break in query order (qids
    sorted), then rank order. ``codes``: :func:`name_codes` of ``run``, when computed for a whole stage."""
    if k < 1:
        raise ValueError(f"depth must be positive, got {k}")
    index = (
        first
        if isinstance(first, CandidateIndex) and first.depth == depth
        else CandidateIndex.of(first.ids if isinstance(first, CandidateIndex) else first, depth)
    )
    f = index.ids
    if run.qids == f.qids:
        fq_of = np.arange(len(f.qids), dtype=np.int64)
    else:
        where = {q: i for i, q in enumerate(f.qids)}
        fq_of = np.fromiter((where.get(q, -1) for q in run.qids), dtype=np.int64, count=len(run.qids))
    if run.qids == f.qids and np.array_equal(run.offsets, f.offsets):  # as many rows per query: the same
        r_query, r_pos = index.query, index.pos
    else:
        r_query, r_pos = _positions(run)
    if codes is None:
        codes = name_codes(f, [run])[0]
    code = codes[run.codes]  # the first-stage code of each row's id, -1: not in the first-stage run
    fq = fq_of[r_query]
    row = np.where(code >= 0, index.row_of_code[np.maximum(code, 0)], -1)  # ids of one query: direct
    row[(row >= 0) & (index.query[np.maximum(row, 0)] != fq)] = -1
    several = np.flatnonzero((row < 0) & (code >= 0) & (fq >= 0))  # ids of several queries: by key
    if several.size:
        keys = fq[several] * max(len(f.names), 1) + code[several]
        at = np.minimum(np.searchsorted(index.keys, keys), max(index.keys.size - 1, 0))
        ok = index.keys[at] == keys if index.keys.size else np.zeros(several.size, dtype=bool)
        row[several[ok]] = index.key_rows[at[ok]]
    fpos = np.where(row >= 0, index.pos[np.maximum(row, 0)], -1)  # first-stage position of each row's id
    bad = (fpos < 0) | ((r_pos < k) & (fpos >= k)) | ((r_pos >= k) & (fpos != r_pos))
    expected = np.where(fq_of >= 0, index.candidates[np.maximum(fq_of, 0)], 0)
    short = np.flatnonzero(np.diff(run.offsets) != expected)
    first_bad = int(np.argmax(bad)) if bad.any() else -1
    if first_bad < 0 and short.size == 0:
        return None
    if first_bad >= 0 and (short.size == 0 or r_query[first_bad] <= short[0]):
        return _row_break(
            f,
            run,
            k,
            depth,
            first_bad,
            int(r_query[first_bad]),
            int(fq[first_bad]),
            int(fpos[first_bad]),
            int(r_pos[first_bad]),
        )
    return _missing_break(f, run, int(short[0]), int(fq_of[short[0]]), depth)


def _row_break(
    first: RankedIds, run: RankedIds, k: int, depth: int, row: int, rq: int, fq: int, fpos: int, pos: int
) -> ReorderingBreak:
    qid, docid, rank = run.qids[rq], run.docid(row), pos + 1
    if fq < 0:
        return ReorderingBreak(qid, rank, docid, "the first-stage run has no candidates for this query")
    a, b = int(first.offsets[fq]), int(first.offsets[fq + 1])
    if fpos < 0:
        same = [i for i in range(a, b) if first.docid(i) == docid]
        if same:
            where = same[0] - a + 1
            return ReorderingBreak(
                qid, rank, docid, f"the first stage ranks it {where}, outside its {depth} candidates"
            )
        return ReorderingBreak(qid, rank, docid, "not a first-stage candidate of this query (a foreign id)")
    if pos < k:
        return ReorderingBreak(
            qid,
            rank,
            docid,
            f"the first stage ranks it {fpos + 1}, beyond k = {k}: only "
            f"its first {k} may be reordered into the top {k}",
        )
    return ReorderingBreak(
        qid,
        rank,
        docid,
        f"the first stage ranks it {fpos + 1}; ranks after k = {k} keep "
        f"the first stage's order (its rank {rank} is {first.docid(a + pos)!r})",
    )


def _missing_break(first: RankedIds, run: RankedIds, rq: int, fq: int, depth: int) -> ReorderingBreak:
    qid = run.qids[rq]
    held = {run.docid(i) for i in range(int(run.offsets[rq]), int(run.offsets[rq + 1]))}
    a = int(first.offsets[fq])
    n = min(int(first.offsets[fq + 1]) - a, depth)
    pos = next(p for p in range(n) if first.docid(a + p) not in held)
    return ReorderingBreak(
        qid,
        None,
        first.docid(a + pos),
        f"the first stage's candidate at its rank "
        f"{pos + 1} is missing ({len(held)} of its {n} candidates held)",
    )


def _line_of(path: Path, qid: str, docid: str) -> int | None:
    """The line of ``path`` that holds (qid, docid), for the message (read again only on a break)."""
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None
    for number, line in enumerate(text.splitlines(), start=1):
        cols = line.split()
        if len(cols) == 6 and cols[0].lstrip("\ufeff") == qid and cols[2] == docid:
            return number
    return None


def check_reordering(
    first: RankedIds | CandidateIndex,
    run: RankedIds,
    k: int,
    *,
    run_path: Path,
    first_name: str,
    depth: int = QUALITY_DEPTH,
    codes: np.ndarray | None = None,
    shown_as: str | None = None,
) -> None:
    """Raise :class:`TrecFormatError` (file and line of ``run_path``, query, id, rank, fix) when ``run``
    breaks the invariant against ``first`` (named ``first_name`` in the message; the run file is named
    ``shown_as``, default ``run_path``)."""
    found = reordering_break(first, run, k, depth, codes=codes)
    if found is None:
        return
    line = _line_of(run_path, found.qid, found.docid) if found.rank is not None else None
    at = f"rank {found.rank} holds {found.docid!r}" if found.rank is not None else f"{found.docid!r}"
    raise TrecFormatError(
        shown_as or run_path,
        line,
        f"per query exactly the candidates of {first_name} (its first {depth}), ranks 1..{k} reordered and "
        f"later ranks in its order; in query {found.qid!r} {at}: {found.why}",
        FIX,
        RERANKED_KIND,
    )


def check_run_files(first_path: Path, runs: Sequence[tuple[Path, int]], *, first_name: str) -> None:
    """Check run files ``runs`` ((path, depth k) each) against the first-stage run ``first_path``; a missing
    first stage is refused too (the runs could not be checked)."""
    if not runs:
        return
    if not first_path.is_file():
        names = ", ".join(p.name for p, _ in runs)
        raise TrecFormatError(
            first_path,
            None,
            f"the first-stage run {first_name}, which the reranked runs {names} reorder",
            "add the stage's first-stage run to the runs folder",
            RERANKED_KIND,
        )
    index = CandidateIndex.of(read_ids(first_path))
    for path, k in runs:
        check_reordering(index, read_ids(path), k, run_path=path, first_name=first_name)
