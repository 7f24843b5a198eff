from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.equality.spearman import average_ranks, spearman


def test_average_ranks_ties() -> None:
    assert average_ranks([3.0, 1.0, 3.0, 2.0]).tolist() == [3.5, 1.0, 3.5, 2.0]


def test_perfect_and_reversed() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)


def test_constant_side_is_nan() -> None:
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))


def test_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        spearman([1, 2], [1, 2, 3])
    with pytest.raises(ValueError):
        spearman([1.0, float("nan")], [1, 2])


small_ints = st.lists(st.integers(min_value=0, max_value=5), min_size=3, max_size=40)


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_matches_scipy_with_ties(data: st.DataObject) -> None:
    from scipy.stats import spearmanr  # heavy: not at collection

    a = data.draw(small_ints)
    b = data.draw(st.lists(st.integers(0, 5), min_size=len(a), max_size=len(a)))
    ours = spearman(a, b)
    ref = spearmanr(a, b).statistic
    if np.isnan(ref):
        assert math.isnan(ours)
    else:
        assert ours == pytest.approx(float(ref), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=100).filter(
        lambda v: len(set(v)) > 1
    )
)
def test_matches_scipy_continuous(a: list[float]) -> None:
    from scipy.stats import spearmanr  # heavy: not at collection

    rng = np.random.default_rng(len(a))
    b = np.asarray(a) + rng.normal(0, 1e5, len(a))
    assert spearman(a, b) == pytest.approx(float(spearmanr(a, b).statistic), abs=1e-12)
