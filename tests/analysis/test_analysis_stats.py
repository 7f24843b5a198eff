"""Bootstrap against scipy, randomisation test against exact enumeration, Holm against statsmodels."""

from __future__ import annotations

import gc
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.core.plan import SEED
from analysis.stats.metrics import Judgments
from analysis.stats.multiple import holm
from analysis.stats.resampling import (
    bootstrap_indices,
    bootstrap_intervals,
    bootstrap_means,
    linear_quantiles,
    paired_differences,
    percentile_interval,
    randomisation_p_exact,
    randomisation_p_values,
    sign_matrix,
)


def test_bootstrap_equals_scipy_with_the_same_draw() -> None:
    import scipy.stats  # heavy: not at collection

    rng = np.random.default_rng(5)
    x = rng.random(305)
    ours = bootstrap_intervals(x)
    ref = scipy.stats.bootstrap(
        (x,),
        np.mean,
        n_resamples=10_000,
        method="percentile",
        confidence_level=0.95,
        rng=np.random.default_rng(SEED),
        vectorized=True,
    )
    # scipy draws rng.integers(0, n, (10000, n)) in one batch: the very same indices as ours
    idx = bootstrap_indices(305)
    assert np.array_equal(np.random.default_rng(SEED).integers(0, 305, size=(10_000, 305)), idx)
    # ours differ from scipy only by the exact grid (step 2**-44 for 305 queries: a mean moves < 2.9e-14)
    np.testing.assert_allclose(bootstrap_means(x), ref.bootstrap_distribution, rtol=0, atol=3e-14)
    assert ours[0] == pytest.approx(ref.confidence_interval.low, abs=3e-14)
    assert ours[1] == pytest.approx(ref.confidence_interval.high, abs=3e-14)
    # on values already on the grid (x quantised first) the intervals are equal to the last bit
    xg = np.ldexp(np.rint(np.ldexp(x, 44)), -44)
    ref_g = scipy.stats.bootstrap(
        (xg,),
        np.mean,
        n_resamples=10_000,
        method="percentile",
        rng=np.random.default_rng(SEED),
        vectorized=True,
    )
    assert np.array_equal(bootstrap_means(xg), ref_g.bootstrap_distribution)
    # scipy.stats.quantile and numpy.quantile(method="linear") interpolate with different formulas: 1 ulp
    np.testing.assert_array_max_ulp(bootstrap_intervals(xg), np.array(list(ref_g.confidence_interval)), 1)
    # interval of binary data (hit@5) and matrix form agree with the one-column form
    hits = (rng.random(305) < 0.4).astype(float)
    ref_h = scipy.stats.bootstrap(
        (hits,),
        np.mean,
        n_resamples=10_000,
        method="percentile",
        rng=np.random.default_rng(SEED),
        vectorized=True,
    )
    both = bootstrap_intervals(np.column_stack([x, hits]))
    assert np.array_equal(both[0], ours)  # independent of which other runs are evaluated together
    assert np.array_equal(bootstrap_means(hits), ref_h.bootstrap_distribution)  # binary values: exact
    np.testing.assert_array_max_ulp(both[1], np.array(list(ref_h.confidence_interval)), 1)


def test_bootstrap_intervals_are_the_quantiles_of_the_bootstrap_means_bit_for_bit() -> None:
    """bootstrap_intervals computes the means transposed and partitions them in place; the numbers are those
    of the procedure as written (numpy.quantile of bootstrap_means along the resamples)."""
    rng = np.random.default_rng(11)
    for n, k in [(305, 224), (50, 3), (7, 1), (1, 2)]:
        values = rng.random((n, k))
        values[0, 0], values[-1, -1] = 1.0, 0.0
        written = percentile_interval(bootstrap_means(values)).T
        assert np.array_equal(bootstrap_intervals(values), written), (n, k)
        assert np.array_equal(bootstrap_intervals(values[:, 0]), written[0]), (n, k)
    # linear_quantiles (bootstrap_intervals' own numpy.quantile) against numpy's, bit for bit (signed zeros
    # too): ties, one and two values, quantiles 0 and 1, on both sides of numpy's lerp switch at 0.5
    for m, k in [(10_000, 3), (1, 2), (2, 2), (7, 4), (40, 1)]:
        rows = rng.random((k, m)) * rng.choice([-1.0, 1e-300, 1e10])
        rows[0] = np.rint(rows[0] * 4) / 4
        rows[:, 0] = -0.0
        for q in ([0.025, 0.975], [(1 - 0.95) / 2, 1 - (1 - 0.95) / 2], [0.0, 1.0], [0.5], rng.random(5)):
            q = np.asarray(q, dtype=np.float64)
            expected = np.quantile(rows, q, axis=1, method="linear")
            got = linear_quantiles(rows.copy(), q)
            assert expected.shape == got.shape and np.array_equal(expected.view(np.int64), got.view(np.int64))


def test_bootstrap_means_are_exact_with_python_integers() -> None:
    rng = np.random.default_rng(9)
    x = rng.random(305)
    idx = bootstrap_indices(305)
    q = [round(v * 2**44) for v in x.tolist()]  # Python round: half to even, like numpy.rint
    means = bootstrap_means(x)
    for b in (0, 1, 4999, 9999):
        assert means[b] == sum(q[i] for i in idx[b].tolist()) / (305 * 2**44)


def test_bootstrap_on_real_qrels_query_count(miracl_qrels: dict[str, dict[str, int]]) -> None:
    n = len(Judgments.from_qrels(miracl_qrels).qids)
    const = np.full(n, 0.25)
    assert bootstrap_intervals(const) == pytest.approx([0.25, 0.25], abs=1e-15)


def test_identical_runs_give_p_one() -> None:
    rng = np.random.default_rng(2)
    a = rng.random(305)
    assert randomisation_p_values(paired_differences(a, a)) == 1.0
    assert randomisation_p_exact(paired_differences(a[:8], a[:8])) == 1.0


@pytest.mark.parametrize("seed", range(6))
def test_monte_carlo_converges_to_exact(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 12
    a = np.clip(rng.normal(0.5 + 0.03 * seed, 0.1, n), 0, 1)
    d = paired_differences(a, np.clip(rng.normal(0.5, 0.1, n), 0, 1))
    exact = randomisation_p_exact(d)
    mc = float(randomisation_p_values(d, resamples=200_000, seed=seed))
    se = np.sqrt(exact * (1 - exact) / 200_000)
    assert abs(mc - exact) <= 4 * se + 1e-5
    # with the plan's 10,000 resamples too (wider band)
    mc10 = float(randomisation_p_values(d))
    assert abs(mc10 - exact) <= 4 * np.sqrt(exact * (1 - exact) / 10_000) + 1e-4


def test_exact_enumeration_by_hand() -> None:
    # d = (1, 1): sign vectors ++, +-, -+, -- give T = 1, 0, 0, -1; |T| >= 1 twice -> p = 1/2
    assert randomisation_p_exact(np.array([1.0, 1.0])) == 0.5
    # d = (3, 1, 2): only ++ and -- reach |T| = 2 -> 2/8
    assert randomisation_p_exact(np.array([3.0, 1.0, 2.0])) == 0.25
    with pytest.raises(ValueError, match="too large"):
        randomisation_p_exact(np.zeros(30))


def test_p_value_convention_and_matrix_form() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.random((305, 7)), rng.random((305, 7)) * 0.98
    d = paired_differences(a, b)
    p = randomisation_p_values(d)
    signs = sign_matrix(305).astype(np.int64)
    for k in range(7):
        dk = d[:, k].astype(np.int64)  # exact integer arithmetic, no BLAS
        count = int(np.count_nonzero(np.abs(signs @ dk) >= abs(int(dk.sum()))))
        assert p[k] == (1 + count) / 10_001
    assert set(np.unique(signs)) == {-1.0, 1.0}
    assert p.min() >= 1 / 10_001
    # a huge effect reaches the smallest attainable p
    better = np.clip(rng.random(305) * 0.5 + 0.3, 0, 1)
    assert randomisation_p_values(paired_differences(better, better - 0.2)) == 1 / 10_001
    with pytest.raises(ValueError, match="paired_differences"):
        randomisation_p_values(np.full(305, 0.1))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=15), st.floats(0.001, 0.2))
def test_holm_equals_statsmodels(p: list[float], alpha: float) -> None:
    from statsmodels.stats.multitest import multipletests  # heavy: not at collection

    reject, adjusted = holm(p, alpha)
    # statsmodels' Holm branch ends in gc.collect(), a full collection of the test process (~0.2 s a call,
    # most of this test's time); it frees memory and touches no number, so it is skipped here
    with mock.patch.object(gc, "collect", return_value=0):
        _, ref_adj, _, _ = multipletests(p, alpha=alpha, method="holm")
    # the same products, running maximum and clip as statsmodels: equal to the last bit
    assert np.array_equal(adjusted, ref_adj)
    # our rule, one definite expectation: reject exactly when the adjusted p is <= alpha. (statsmodels decides
    # by p <= alpha / (m - i) instead, which can differ by one rounding exactly at the boundary.)
    assert reject.tolist() == (ref_adj <= alpha).tolist()


def test_holm_boundary_is_inclusive() -> None:
    reject, adjusted = holm([0.025, 0.025], 0.05)
    assert adjusted.tolist() == [0.05, 0.05] and reject.tolist() == [True, True]
    reject, adjusted = holm([0.0250000001, 0.0250000001], 0.05)
    assert reject.tolist() == [False, False]


def test_holm_known_values_and_errors() -> None:
    reject, adj = holm([0.01, 0.04, 0.03, 0.005])
    assert adj == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert list(reject) == [True, False, False, True]
    with pytest.raises(ValueError):
        holm([0.5, 1.5])
