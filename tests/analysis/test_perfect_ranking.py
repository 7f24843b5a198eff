"""A perfect ranking scores exactly 1.0 on every Python.

Python 3.12 made ``sum()`` of floats compensated; an ideal DCG summed that way differs in the last bit from
the DCG of the same ranking summed left to right (``np.bincount``), and a perfect ranking of a query with
6 to 9 relevant passages scored 1.0000000000000002 on 3.14, which ``analysis.stats.resampling`` refuses.
Before the ideal DCG used ``analysis.core.floatsum.ltr_sum`` these tests failed on Python 3.14 (and passed on
3.11).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import pytrec_eval

from analysis.core.floatsum import ltr_mean, ltr_sum
from analysis.core.plan import PYTREC_EVAL_TOLERANCE
from analysis.reporting.pytrec_check import compare_with_pytrec_eval
from analysis.stats.metrics import evaluate
from analysis.stats.resampling import bootstrap_intervals, randomisation_p_values

Qrels = dict[str, dict[str, int]]
Run = dict[str, list[tuple[str, float]]]

# labels of the relevant passages per query: binary and graded, 6 to 9 relevant (the failing range on 3.14),
# and around it (fewer, and more than the cutoff of 10)
LABELS: dict[str, list[int]] = {
    **{f"bin{n}": [1] * n for n in range(1, 13)},
    **{f"graded{n}": [3, 1, 2, 1, 2, 3, 1, 1, 2, 1, 3][:n] for n in range(6, 10)},
    **{f"twolevel{n}": [2] * (n // 2) + [1] * (n - n // 2) for n in range(6, 10)},
}


def _qrels_and_perfect_run(labels: dict[str, list[int]]) -> tuple[Qrels, Run]:
    qrels: Qrels = {}
    run: Run = {}
    for q, gains in labels.items():
        rel = {f"{q}-r{i}": g for i, g in enumerate(gains)}
        qrels[q] = {**rel, f"{q}-n0": 0, f"{q}-n1": 0}  # judged non-relevant passages too
        order = [*sorted(rel, key=lambda d: -rel[d]), f"{q}-n0", f"{q}-n1", f"{q}-unjudged"]
        run[q] = [(d, float(len(order) - i)) for i, d in enumerate(order)]  # strictly decreasing scores
    return qrels, run


def test_the_failing_range_is_covered() -> None:
    counts = {len(v) for v in LABELS.values()}
    assert {6, 7, 8, 9} <= counts
    assert any(len(set(v)) > 1 for v in LABELS.values() if 6 <= len(v) <= 9)  # graded labels too


def test_perfect_ranking_scores_exactly_one() -> None:
    qrels, run = _qrels_and_perfect_run(LABELS)
    ndcg = evaluate(qrels, run, measures=["ndcg@10"])["ndcg@10"]
    wrong = {q: v.hex() for q, v in ndcg.items() if v != 1.0}
    assert wrong == {}


def test_resampling_accepts_a_perfect_ranking() -> None:
    qrels, run = _qrels_and_perfect_run(LABELS)
    values = np.array(list(evaluate(qrels, run, measures=["ndcg@10"])["ndcg@10"].values()))
    low, high = bootstrap_intervals(values)
    assert (low, high) == (1.0, 1.0)
    p = randomisation_p_values(values - values)  # against itself: no difference, p = 1
    assert float(np.asarray(p).ravel()[0]) == 1.0


def test_pytrec_eval_agrees_on_a_perfect_ranking() -> None:
    qrels, run = _qrels_and_perfect_run(LABELS)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(
        {q: {d: s for d, s in rows} for q, rows in run.items()}
    )
    for q in qrels:
        assert abs(theirs[q]["ndcg_cut_10"] - 1.0) <= PYTREC_EVAL_TOLERANCE, q
    check = compare_with_pytrec_eval(qrels, run)
    assert check.ours == 1.0
    assert check.max_abs_diff <= PYTREC_EVAL_TOLERANCE


def test_perfect_ranking_of_every_miracl_dev_query(miracl_qrels: Qrels) -> None:
    """The study's own qrels: 18 of the 305 dev queries have 6 to 9 relevant passages."""
    labels = {q: sorted((r for r in v.values() if r > 0), reverse=True) for q, v in miracl_qrels.items()}
    assert sum(1 for v in labels.values() if 6 <= len(v) <= 9) == 18
    run = {
        q: [(d, float(-i)) for i, d in enumerate(sorted(v, key=lambda d, v=v: -v[d]))]
        for q, v in miracl_qrels.items()
    }
    ndcg = evaluate(miracl_qrels, run, measures=["ndcg@10"])["ndcg@10"]
    assert {q: v for q, v in ndcg.items() if v != 1.0} == {}


@pytest.mark.parametrize("seed", range(5))
def test_ltr_sum_is_left_to_right(seed: int) -> None:
    """Against numpy's sequential cumulative sum (np.cumsum adds strictly in order); the data are such that
    a compensated or exact sum differs, so the comparison can fail."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(2000) * 10.0 ** rng.integers(-8, 9, 2000)
    assert ltr_sum(x.tolist()) == float(np.cumsum(x)[-1])
    assert ltr_sum(x.tolist()) != math.fsum(x.tolist())
    assert ltr_mean(x.tolist()) == float(np.cumsum(x)[-1]) / x.size


def test_ltr_sum_matches_python_311_sum() -> None:
    """docs/field-notes.md: sum([212.30, 1.70, 209/12]) is 231.41666666666666 on 3.11 and ...69 on 3.12+."""
    assert ltr_sum([212.30, 1.70, 209 / 12]) == 231.41666666666666
    assert math.fsum([212.30, 1.70, 209 / 12]) == 231.41666666666669


def test_ltr_mean_of_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="mean of no values"):
        ltr_mean([])
