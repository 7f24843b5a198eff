"""Depth derivation: the run at depth k is the first k candidates reranked, then the first-stage tail."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.stats.ranking import rank_by_score
from bench.quality.depths import call_depths, ranking_at_depth, source_depth


def test_only_first_k_are_ranked() -> None:
    docids = [f"d{i}" for i in range(100)]
    scores = [float(i) for i in range(100)]  # last candidate scores highest
    run20 = ranking_at_depth(docids, scores, 20)
    assert len(run20) == 100
    assert [d for d, _ in run20] == [f"d{i}" for i in range(19, -1, -1)] + docids[20:]
    assert [s for _, s in run20[18:22]] == [1.0, 0.0, -1.0, -2.0]  # placeholder tail below the lowest score
    assert ranking_at_depth(docids, scores, 100)[0] == ("d99", 99.0)
    # a listwise call at depth 20 has 20 scores for the same candidate list
    assert ranking_at_depth(docids, scores[:20], 20) == run20


def test_ties_keep_first_stage_order() -> None:
    assert ranking_at_depth(["a", "b", "c"], [1.0, 2.0, 1.0], 3) == [("b", 2.0), ("a", 1.0), ("c", 1.0)]


def test_short_candidate_list() -> None:
    assert ranking_at_depth(["a", "b"], [0.0, 1.0], 20) == [("b", 1.0), ("a", 0.0)]
    assert ranking_at_depth(["a", "b", "c"], [0.0, 1.0], 2) == [("b", 1.0), ("a", 0.0), ("c", -1.0)]


def test_called_depths() -> None:
    assert call_depths(False) == (100,)
    assert call_depths(True) == (20, 50, 100)
    assert source_depth(20, per_depth=False) == 100
    assert source_depth(20, per_depth=True) == 20


def test_tail_matters_for_condensed_ndcg() -> None:
    """Why the tail is written: nDCG'@10 (unjudged removed) reaches below rank k when few are judged."""
    from analysis.stats import metrics

    docids = [f"{i}#0" for i in range(100)]
    scores = [0.0] * 100
    qrels = {"q": {"30#0": 1, "31#0": 0}}  # nothing judged in the top 20
    with_tail = ranking_at_depth(docids, scores, 20)
    head_only = with_tail[:20]
    a = metrics.evaluate(qrels, {"q": with_tail}, measures=["ndcg'@10"])["ndcg'@10"]["q"]
    b = metrics.evaluate(qrels, {"q": head_only}, measures=["ndcg'@10"])["ndcg'@10"]["q"]
    assert a == 1.0 and b == 0.0


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.sampled_from([20, 50, 100]))
def test_rank_order_is_a_valid_run_and_head_is_rank_by_score(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    docids = [f"{i}#0" for i in range(100)]
    scores = rng.integers(-5, 5, size=100).astype(float).tolist()  # many ties
    run = ranking_at_depth(docids, scores, k)
    assert [d for d, _ in run[k:]] == docids[k:]
    assert run[:k] == rank_by_score(docids[:k], scores[:k])
    values = [s for _, s in run]
    assert all(b <= a for a, b in itertools.pairwise(values))
    assert sorted(d for d, _ in run) == sorted(docids)
