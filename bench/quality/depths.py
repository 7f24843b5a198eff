"""Depths: which depths a model is called at, and how its run at depth k is made (plan section "Quality").

The plan: "Pointwise depths 20 and 50 are derived from the same scores (only the first k candidates are
reordered); jina is run separately per depth."

Definition used here (``ranking_at_depth``): the run of a model at depth k, for one query, is the first k
first-stage candidates ordered by ``analysis.stats.ranking.rank_by_score`` (score descending, ties in
first-stage order), followed by candidates k+1..100 in first-stage order, unchanged. The tail matters:
nDCG'@10 is computed on the condensed list (unjudged passages removed), whose top 10 can reach below rank k
when the reranked top k holds fewer than 10 judged passages (``tests/quality/test_depths.py`` shows a case). A
TREC run's scores must fall with rank, so the tail gets placeholder scores: the j-th tail candidate (j =
1..100-k) has score ``m - j`` where ``m`` is the lowest score of the reranked top k. They are not model
scores; they only keep the file's order valid (``TAIL_SCORE_RULE``, recorded with the runs).

A pointwise model (scores of a candidate do not depend on the others) is called once at depth 100 and
its depth-k runs use the first k of those scores. A listwise model (``RerankerMeta.listwise``, jina) or an
API model whose check 3 found it not pointwise is called separately at every depth with exactly the first
k candidates, and its depth-k run is that call's scores.
"""

from __future__ import annotations

from collections.abc import Sequence

from analysis.stats.ranking import rank_by_score
from bench.core.plan import DEPTHS, QUALITY_DEPTH

DEPTH_RULE = (
    "run at depth k = the first k first-stage candidates ordered by rank_by_score, then candidates k+1..100 "
    "in first-stage order; pointwise models: the top-k scores are the first k of the depth-100 call's "
    "scores; listwise models: one call per depth with exactly the first k candidates"
)
TAIL_SCORE_RULE = (
    "candidates below depth k keep first-stage order with placeholder score m - j (m: lowest reranked score "
    "of the query, j = 1, 2, ... down the tail); not model scores"
)


def call_depths(per_depth: bool, depths: Sequence[int] = DEPTHS) -> tuple[int, ...]:
    """Depths at which the adapter is called: every depth if ``per_depth``, else only the quality depth."""
    if per_depth:
        return tuple(sorted(set(depths)))
    return (QUALITY_DEPTH,)


def source_depth(k: int, per_depth: bool) -> int:
    """The called depth whose scores make the run at depth k."""
    return k if per_depth else QUALITY_DEPTH


def ranking_at_depth(candidates: Sequence[str], scores: Sequence[float], k: int) -> list[tuple[str, float]]:
    """The run of one query at depth k: the first k ``candidates`` (first-stage order) ranked by the first k
    ``scores``, then the remaining candidates in first-stage order with placeholder scores.

    ``scores`` are those of the call (depth 100 for a pointwise model, depth k for a listwise one) and
    belong to the first ``len(scores)`` candidates; a short first-stage list is ranked as it is.
    """
    if k < 1:
        raise ValueError(f"depth must be positive, got {k}")
    n = min(k, len(candidates))
    if len(scores) < n:
        raise ValueError(f"{len(scores)} scores for the first {n} candidates")
    head = rank_by_score(list(candidates[:n]), list(scores[:n]))
    if n == len(candidates):
        return head
    low = min(s for _, s in head) if head else 0.0
    tail = [(d, low - j) for j, d in enumerate(candidates[n:], start=1)]
    return head + tail
