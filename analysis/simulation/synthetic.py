"""Synthetic runs on the real qrels with known effects, for the simulation command, the benchmark and the
tests. Not part of any measurement.

Each query gets a fixed candidate pool: all its judged passages plus unjudged filler ids up to the depth. A
"system" scores every candidate as ``signal * [rel > 0] + N(0, 1)``; a larger signal gives a better ranking.
Reranked runs reorder the first stage's top k by their own scores (ties by first-stage rank, the plan's rule),
followed by the rest of the first stage's candidates in its order (bench's layout of a depth-k run).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from analysis.inputs.trec import RunTable, write_run
from analysis.stats.metrics import Judgments, evaluate_indexed

__all__ = ["Candidates", "calibrate_signal", "rerank_table", "system_scores", "write_study"]


@dataclass(frozen=True)
class Candidates:
    qids: tuple[str, ...]
    row_query: np.ndarray  # query index of each row (rows grouped by query)
    docids: tuple[str, ...]
    relevant: np.ndarray  # float 0/1

    @classmethod
    def from_qrels(cls, qrels: Mapping[str, Mapping[str, int]], depth: int = 100) -> Candidates:
        qids = tuple(sorted(qrels))
        docids: list[str] = []
        rows: list[int] = []
        rel: list[float] = []
        for i, q in enumerate(qids):
            judged = sorted(qrels[q])
            fill = [f"{90_000_000 + 1000 * i + j}#0" for j in range(max(0, depth - len(judged)))]
            pool = judged + fill
            docids += pool
            rows += [i] * len(pool)
            rel += [1.0 if qrels[q].get(d, 0) > 0 else 0.0 for d in pool]
        return cls(qids, np.asarray(rows, dtype=np.int64), tuple(docids), np.asarray(rel))

    @cached_property
    def docid_array(self) -> np.ndarray:
        """``docids`` as an object array, so that a table's docids are one fancy index, not a Python loop."""
        return np.asarray(self.docids, dtype=object)


def system_scores(c: Candidates, signal: float, rng: np.random.Generator) -> np.ndarray:
    return signal * c.relevant + rng.standard_normal(c.relevant.size)


def _layout(c: Candidates, rows: np.ndarray) -> tuple[tuple[str, ...], np.ndarray]:
    """The qids present in ``rows`` (grouped by query) and their row offsets."""
    counts = np.bincount(c.row_query[rows], minlength=len(c.qids))
    present = counts > 0
    offsets = np.zeros(int(present.sum()) + 1, dtype=np.int64)
    np.cumsum(counts[present], out=offsets[1:])
    return tuple(q for q, p in zip(c.qids, present.tolist(), strict=True) if p), offsets


def _table(c: Candidates, rows: np.ndarray, scores: np.ndarray) -> RunTable:
    qids, offsets = _layout(c, rows)
    return RunTable(qids, offsets, tuple(c.docid_array[rows].tolist()), scores[rows])


def first_stage_order(c: Candidates, scores: np.ndarray, depth: int = 100) -> np.ndarray:
    """Row indices of each query's top ``depth`` by score, grouped by query, in rank order."""
    order = np.lexsort((-scores, c.row_query))
    q = c.row_query[order]
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    pos = np.arange(order.size) - np.repeat(starts, np.diff(np.r_[starts, order.size]))
    return order[pos < depth]


def first_stage_table(c: Candidates, scores: np.ndarray, depth: int = 100) -> RunTable:
    return _table(c, first_stage_order(c, scores, depth), scores)


def rerank_rows(c: Candidates, first_rows: np.ndarray, model_scores: np.ndarray, k: int) -> np.ndarray:
    """Row indices of the first stage's top k (``first_rows`` from :func:`first_stage_order`) reordered by
    model scores, grouped by query."""
    q = c.row_query[first_rows]
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    pos = np.arange(first_rows.size) - np.repeat(starts, np.diff(np.r_[starts, first_rows.size]))
    top = first_rows[pos < k]
    top_pos = pos[pos < k]
    order = np.lexsort((top_pos, -model_scores[top], c.row_query[top]))  # ties by first-stage rank
    return top[order]


def rerank_table(c: Candidates, first_rows: np.ndarray, model_scores: np.ndarray, k: int) -> RunTable:
    """The first stage's top k (``first_rows`` from :func:`first_stage_order`) reordered by model scores."""
    return _table(c, rerank_rows(c, first_rows, model_scores, k), model_scores)


def calibrate_signal(
    c: Candidates, judgments: Judgments, target_ndcg10: float, *, seed: int = 0, replicates: int = 4
) -> float:
    """Signal whose expected nDCG@10 (first stage at depth 100) is ``target_ndcg10`` (bisection)."""
    lo, hi = 0.0, 8.0
    doc = np.fromiter(  # each candidate's index in the qrels, looked up once (evaluate_indexed: same values)
        map(judgments.doc_index.get, c.docids, itertools.repeat(-1)), dtype=np.int64, count=len(c.docids)
    )

    def ndcg10(scores: np.ndarray) -> float:
        rows = first_stage_order(c, scores)
        qids, offsets = _layout(c, rows)
        return evaluate_indexed(judgments, qids, offsets, doc[rows], ["ndcg@10"])["ndcg@10"].mean()

    for _ in range(22):
        mid = (lo + hi) / 2
        rng = np.random.default_rng(seed)
        value = np.mean([ndcg10(system_scores(c, mid, rng)) for _ in range(replicates)])
        lo, hi = (mid, hi) if value < target_ndcg10 else (lo, mid)
    return (lo + hi) / 2


def _as_run(t: RunTable) -> dict[str, list[tuple[str, float]]]:
    return t.as_dict()


def _with_tail(
    c: Candidates, top_rows: np.ndarray, first_rows: np.ndarray, model_scores: np.ndarray
) -> dict[str, list[tuple[str, float]]]:
    """bench's layout of a depth-k run: the reranked top k (``top_rows``), then the first stage's remaining
    candidates in first-stage order with placeholder scores ``m - j`` (m: lowest reranked score)."""
    tail_rows = first_rows[~np.isin(first_rows, top_rows)]  # rows are candidates: unique within a query
    top_q, tail_q = c.row_query[top_rows], c.row_query[tail_rows]
    top_scores = model_scores[top_rows]
    last = np.flatnonzero(np.r_[top_q[1:] != top_q[:-1], True]) if top_q.size else top_q
    low = np.zeros(len(c.qids))
    low[top_q[last]] = top_scores[last]
    starts = np.flatnonzero(np.r_[True, tail_q[1:] != tail_q[:-1]]) if tail_q.size else tail_q
    j = np.arange(tail_q.size) - np.repeat(starts, np.diff(np.r_[starts, tail_q.size])) + 1
    order = np.argsort(np.r_[top_q, tail_q], kind="stable")  # per query: the top k, then the tail
    rows = np.r_[top_rows, tail_rows][order]
    qids, offsets = _layout(c, rows)
    scores = np.r_[top_scores, low[tail_q] - j][order]
    return RunTable(qids, offsets, tuple(c.docid_array[rows].tolist()), scores).as_dict()


def write_study(
    out: Path,
    qrels: Mapping[str, Mapping[str, int]],
    *,
    stages: Sequence[str],
    models: Mapping[str, float],
    depths: Sequence[int] = (20, 50, 100),
    first_signal: float = 1.0,
    seed: int = 1,
    tails: bool = True,
) -> Path:
    """Write ``<out>/first-stage/<stage>.trec`` and ``<out>/<stage>/<model>@<k>.trec`` (model -> signal).

    ``tails`` (default): depth-k runs also hold the first stage's candidates below k (bench's layout, the
    plan's depth rule); ``tails=False`` leaves them out, which ``analysis report`` refuses (a candidate is
    missing: :mod:`analysis.inputs.reordering`)."""
    rng = np.random.default_rng(seed)
    c = Candidates.from_qrels(qrels)
    for stage in stages:
        first_scores = system_scores(c, first_signal, rng)
        rows = first_stage_order(c, first_scores)
        first = _table(c, rows, first_scores)
        write_run(out / "first-stage" / f"{stage}.trec", _as_run(first), f"first-stage/{stage}")
        for model, signal in models.items():
            scores = system_scores(c, signal, rng)
            for k in depths:
                top = rerank_rows(c, rows, scores, k)
                run = _with_tail(c, top, rows, scores) if tails else _as_run(_table(c, top, scores))
                write_run(out / stage / f"{model}@{k}.trec", run, f"{stage}/{model}@{k}")
    return out
