"""Per-query quality metrics of the plan (sections "Quality" and "First stages"), vectorised with numpy.

Definitions (``rel`` from the qrels; judged = present in the qrels for that query; relevant = ``rel > 0``;
ranks are the run's rank order, 1-based):

* ``ndcg@10``: sum over ranks 1..10 of ``max(rel, 0) / log2(rank + 1)``, divided by the same sum for the
  ideal ranking of *all* judged-relevant passages of the query (linear gain; trec_eval ``ndcg_cut_10``).
* ``ndcg'@10``: the same on the condensed list: unjudged passages are removed before the cutoff.
* ``hit@k``: 1 if a relevant passage is in the top k. ``recall@k``: relevant passages in the top k divided by
  all relevant passages of the query. ``mrr@10``: 1 / rank of the first relevant passage in the top 10.
* ``judged@10``: judged passages in the top 10, divided by 10 (a run shorter than 10 counts the empty
  places as unjudged).
* ``ceiling``: ``ndcg@10`` of a perfect reordering of the run's top 100.

Missing-query policy (:data:`MISSING_QUERY_POLICY`): every query of the qrels counts; a query absent from the
run scores 0 on every measure; run queries absent from the qrels are ignored here (the reader refuses them
unless explicitly allowed). A query without relevant passages scores 0 on the nDCG, recall, hit and MRR
measures (MIRACL-de dev has none).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from analysis.inputs.qrels import CUTOFF as _CUTOFF
from analysis.inputs.qrels import UNJUDGED, Judgments
from analysis.inputs.qrels import dcg_discount as _dcg_discount
from analysis.inputs.trec import RunTable

__all__ = [
    "CURVE_DEPTH",
    "MEASURES",
    "MISSING_QUERY_POLICY",
    "Curves",
    "Judgments",
    "curves_indexed",
    "curves_table",
    "evaluate",
    "evaluate_indexed",
    "evaluate_table",
    "mean_scores",
    "scored_indexed",
    "scored_table",
]

MEASURES: Final = (
    "ndcg@10",
    "ndcg'@10",
    "hit@5",
    "hit@10",
    "recall@5",
    "recall@10",
    "recall@20",
    "recall@100",
    "mrr@10",
    "judged@10",
    "ceiling",
)
MISSING_QUERY_POLICY: Final = (
    "every query of the qrels counts; a query missing from a run scores 0 on every measure; run queries "
    "not in the qrels are an error unless explicitly allowed, and then ignored"
)
_CEILING_DEPTH = 100
# Hit@k and Recall@k for every k up to this depth, kept per run when it is read (:class:`Curves`): the costs
# section's context calculation searches the first stage's top 100 (PLAN.md, section "Costs")
CURVE_DEPTH: Final = 100


def _as_table(run: RunTable | Mapping[str, Sequence[tuple[str, float]]]) -> RunTable:
    if isinstance(run, RunTable):
        return run
    qids = tuple(sorted(run))
    counts = [len(run[q]) for q in qids]
    offsets = np.zeros(len(qids) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    docids = tuple(d for q in qids for d, _ in run[q])
    scores = np.array([s for q in qids for _, s in run[q]], dtype=np.float64)
    return RunTable(qids, offsets, docids, scores)


def _group_starts(groups: np.ndarray) -> np.ndarray:
    """First index of each run of equal values in ``groups`` (grouped, e.g. sorted)."""
    if groups.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])


def _group_sizes(groups: np.ndarray) -> np.ndarray:
    return np.diff(np.r_[_group_starts(groups), groups.size])


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros_like(num, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def evaluate_table(
    judgments: Judgments, table: RunTable, measures: Sequence[str] | None = None
) -> dict[str, np.ndarray]:
    """measure -> per-query values aligned with ``judgments.qids`` (vectorised core of :func:`evaluate`)."""
    wanted = _wanted(measures)
    row_q, pos, keep = _row_queries(judgments, table.qids, table.offsets)
    docids = table.docids if bool(keep.all()) else list(itertools.compress(table.docids, keep.tolist()))
    return _measures(judgments, row_q, pos, judgments.relevance(row_q, docids), wanted)


def evaluate_indexed(
    judgments: Judgments,
    qids: Sequence[str],
    offsets: np.ndarray,
    doc: np.ndarray,
    measures: Sequence[str] | None = None,
) -> dict[str, np.ndarray]:
    """:func:`evaluate_table` for rows whose docids are given as indices into ``judgments.doc_index`` (-1:
    not judged): the columnar reader's form, no Python strings. Same arithmetic, same values."""
    wanted = _wanted(measures)
    row_q, pos, keep = _row_queries(judgments, qids, offsets)
    return _measures(judgments, row_q, pos, judgments.relevance_of(row_q, doc[keep]), wanted)


def _wanted(measures: Sequence[str] | None) -> tuple[str, ...]:
    wanted = tuple(MEASURES if measures is None else measures)
    unknown = [m for m in wanted if m not in MEASURES]
    if unknown:
        raise ValueError(f"unknown measure(s) {unknown}; known: {', '.join(MEASURES)}")
    return wanted


def _row_queries(
    judgments: Judgments, qids: Sequence[str], offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Query index (into ``judgments.qids``) and 0-based position of each kept row, and the keep mask (rows
    of queries not in the qrels are dropped)."""
    index = {q: i for i, q in enumerate(judgments.qids)}
    run_to_q = np.array([index.get(q, -1) for q in qids], dtype=np.int64)
    counts = np.diff(offsets)
    row_q = np.repeat(run_to_q, counts)
    pos = np.arange(int(offsets[-1]) if len(offsets) else 0, dtype=np.int64) - np.repeat(offsets[:-1], counts)
    keep = row_q >= 0
    return row_q[keep], pos[keep], keep


def _measures(
    judgments: Judgments, row_q: np.ndarray, pos: np.ndarray, rel: np.ndarray, wanted: tuple[str, ...]
) -> dict[str, np.ndarray]:
    nq = len(judgments.qids)
    judged = rel != UNJUDGED  # every measure counts judged rows only (an unjudged one adds 0 to each sum):
    row_q, pos, rel = row_q[judged], pos[judged], rel[judged]  # the rest of a run, a few percent, in order
    is_judged = rel != UNJUDGED
    gain = np.where(rel > 0, rel, 0).astype(np.float64)
    relevant = gain > 0

    def per_query(weights: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return np.bincount(row_q[mask], weights=weights[mask], minlength=nq)

    out: dict[str, np.ndarray] = {}
    top10 = pos < _CUTOFF
    for m in wanted:
        if m == "ndcg@10":
            weights = gain[top10] * _dcg_discount(pos[top10].astype(np.float64))
            dcg = np.bincount(row_q[top10], weights=weights, minlength=nq)
            out[m] = _safe_div(dcg, judgments.idcg)
        elif m == "ndcg'@10":
            # rank among the judged passages of the query (0-based); rows are grouped by query
            cj = np.cumsum(is_judged)
            cond = cj - 1 - np.repeat(np.r_[0, cj][_group_starts(row_q)], _group_sizes(row_q))
            mask = is_judged & (cond < _CUTOFF)
            dcg = np.bincount(
                row_q[mask], weights=gain[mask] * _dcg_discount(cond[mask].astype(np.float64)), minlength=nq
            )
            out[m] = _safe_div(dcg, judgments.idcg)
        elif m.startswith("hit@"):
            k = int(m[4:])
            out[m] = (per_query(np.ones_like(gain), relevant & (pos < k)) > 0).astype(np.float64)
        elif m.startswith("recall@"):
            k = int(m[7:])
            out[m] = _safe_div(per_query(np.ones_like(gain), relevant & (pos < k)), judgments.n_relevant)
        elif m == "mrr@10":
            first = np.full(nq, np.iinfo(np.int64).max)
            sel = relevant & top10
            np.minimum.at(first, row_q[sel], pos[sel])
            out[m] = np.where(first < _CUTOFF, 1.0 / (first.astype(np.float64) + 1.0), 0.0)
        elif m == "judged@10":
            out[m] = per_query(np.ones_like(gain), is_judged & top10) / _CUTOFF
        elif m == "ceiling":
            sel = relevant & (pos < _CEILING_DEPTH)
            gq, gg = row_q[sel], gain[sel]
            order = np.lexsort((-gg, gq))
            gq, gg = gq[order], gg[order]
            ideal_pos = np.arange(gq.size) - np.repeat(_group_starts(gq), _group_sizes(gq))
            m10 = ideal_pos < _CUTOFF
            dcg = np.bincount(
                gq[m10], weights=(gg * _dcg_discount(ideal_pos.astype(np.float64)))[m10], minlength=nq
            )
            out[m] = _safe_div(dcg, judgments.idcg)
    return out


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    run: RunTable | Mapping[str, Sequence[tuple[str, float]]],
    *,
    measures: Sequence[str] | None = None,
) -> dict[str, dict[str, float]]:
    """measure -> qid -> value for every query of ``qrels`` (run in rank order; see the module docstring)."""
    judgments = Judgments.from_qrels(qrels)
    values = evaluate_table(judgments, _as_table(run), measures)
    return {m: dict(zip(judgments.qids, v.tolist(), strict=True)) for m, v in values.items()}


def mean_scores(
    qrels: Mapping[str, Mapping[str, int]],
    run: RunTable | Mapping[str, Sequence[tuple[str, float]]],
    *,
    measures: Sequence[str] | None = None,
) -> dict[str, float]:
    """measure -> mean over all queries of ``qrels`` (missing queries count as 0)."""
    judgments = Judgments.from_qrels(qrels)
    values = evaluate_table(judgments, _as_table(run), measures)
    return {m: float(np.mean(v)) if v.size else 0.0 for m, v in values.items()}


@dataclass(frozen=True)
class Curves:
    """``hits[k - 1]``: queries with a relevant passage in the top k; ``recall[k - 1]``: mean Recall@k (every
    qrels query counts; a missing query scores 0), for k = 1..``len(hits)``."""

    queries: int
    hits: np.ndarray
    recall: np.ndarray

    def hit_at(self, k: int) -> float:
        return float(self.hits[k - 1]) / self.queries


def _curves(judgments: Judgments, row_q: np.ndarray, pos: np.ndarray, rel: np.ndarray, max_k: int) -> Curves:
    nq = len(judgments.qids)
    relevant = (pos < max_k) & (rel > 0)
    row_q, pos = row_q[relevant], pos[relevant]  # the relevant rows of the top max_k, in order
    first = np.full(nq, max_k, dtype=np.int64)
    np.minimum.at(first, row_q, pos)
    hits = np.cumsum(np.bincount(first[first < max_k], minlength=max_k))[:max_k]
    weights = np.zeros(row_q.size)
    nrel = judgments.n_relevant[row_q]
    np.divide(1.0, nrel, out=weights, where=nrel > 0)
    recall = np.cumsum(np.bincount(pos, weights=weights, minlength=max_k))[:max_k] / max(nq, 1)
    return Curves(nq, hits.astype(np.int64), recall)


def curves_table(judgments: Judgments, table: RunTable, max_k: int = CURVE_DEPTH) -> Curves:
    """Hit@k counts and mean Recall@k of ``table`` for k = 1..``max_k``."""
    row_q, pos, keep = _row_queries(judgments, table.qids, table.offsets)
    docids = table.docids if bool(keep.all()) else list(itertools.compress(table.docids, keep.tolist()))
    return _curves(judgments, row_q, pos, judgments.relevance(row_q, docids), max_k)


def curves_indexed(
    judgments: Judgments, qids: Sequence[str], offsets: np.ndarray, doc: np.ndarray, max_k: int = CURVE_DEPTH
) -> Curves:
    """:func:`curves_table` for rows whose docids are indices into ``judgments.doc_index`` (the columnar
    reader's form). Same arithmetic, same values."""
    row_q, pos, keep = _row_queries(judgments, qids, offsets)
    return _curves(judgments, row_q, pos, judgments.relevance_of(row_q, doc[keep]), max_k)


def scored_indexed(
    judgments: Judgments, qids: Sequence[str], offsets: np.ndarray, doc: np.ndarray, max_k: int = CURVE_DEPTH
) -> tuple[dict[str, np.ndarray], Curves]:
    """:func:`evaluate_indexed` (every measure) and :func:`curves_indexed` from one lookup of the rows'
    relevance (the report reads each run once and keeps both). Only the rows of judged docids are taken
    (:func:`_judged_rows`): every other row is unjudged, which adds 0 to every sum (:func:`_measures`,
    :func:`_curves`), and the judged rows keep their order, so the values are the same bit for bit."""
    row_q, pos, judged_doc = _judged_rows(judgments, qids, offsets, doc)
    rel = judgments.relevance_of(row_q, judged_doc)
    return _measures(judgments, row_q, pos, rel, _wanted(None)), _curves(judgments, row_q, pos, rel, max_k)


def _judged_rows(
    judgments: Judgments, qids: Sequence[str], offsets: np.ndarray, doc: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_row_queries` and ``doc`` of the kept rows, for the rows whose docid is judged in some query
    (``doc >= 0``) only (a run's few percent): each row's query found by its offset, not by repeating
    every query's index over all the rows."""
    rows = np.flatnonzero(doc >= 0)
    if tuple(qids) == judgments.qids:  # the usual run: every qrels query, none other
        run_to_q = np.arange(len(judgments.qids), dtype=np.int64)
    else:
        index = {q: i for i, q in enumerate(judgments.qids)}
        run_to_q = np.array([index.get(q, -1) for q in qids], dtype=np.int64)
    run_q = np.searchsorted(offsets, rows, side="right") - 1
    row_q = run_to_q[run_q]
    keep = row_q >= 0
    rows = rows[keep]
    return row_q[keep], rows - np.asarray(offsets, dtype=np.int64)[run_q[keep]], doc[rows]


def scored_table(
    judgments: Judgments, table: RunTable, max_k: int = CURVE_DEPTH
) -> tuple[dict[str, np.ndarray], Curves]:
    """:func:`evaluate_table` (every measure) and :func:`curves_table` from one lookup of the relevance."""
    row_q, pos, keep = _row_queries(judgments, table.qids, table.offsets)
    docids = table.docids if bool(keep.all()) else list(itertools.compress(table.docids, keep.tolist()))
    rel = judgments.relevance(row_q, docids)
    return _measures(judgments, row_q, pos, rel, _wanted(None)), _curves(judgments, row_q, pos, rel, max_k)
