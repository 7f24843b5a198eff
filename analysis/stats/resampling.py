"""Bootstrap intervals and the paired randomisation test of the plan (section "Quality": 95 % bootstrap
intervals, 10,000 resamples over queries, seed 20261009; paired randomisation test, 10,000 sign flips, seed
20261009).

Exact procedure, so that another implementation reproduces every number:

* Queries are in ascending qid order (Python string order); ``n`` is their number (every qrels query).
* RNG: NumPy ``Generator`` with the ``PCG64`` bit generator, ``numpy.random.default_rng(20261009)``. A fresh
  generator is made for the bootstrap and another fresh one for the randomisation test; every interval of a
  study uses the same resample indices and every test the same sign vectors (common random numbers).
* Per-query values (all metrics lie in [0, 1]; differences in [-1, 1]) are first put on an exact grid:
  ``q = rint(x * 2**s)`` with ``s = 53 - ceil(log2(n))`` (``s = 44`` for 305 queries, a step of 5.7e-14).
  Every sum below is then a sum of integers below ``2**53``: exact in float64 in any order, so the numbers do
  not depend on the BLAS, the CPU, the thread count or which other runs are evaluated together, and an
  implementation with Python integers gets the same bits. The grid moves a mean by at most ``2**-(s+1)``.
* Bootstrap draw: ``idx = rng.integers(0, n, size=(10000, n))`` (int64); row ``b`` is resample ``b``. This
  is exactly the draw of ``scipy.stats.bootstrap`` with ``rng=default_rng(20261009)`` and ``batch=None``.
  Resample statistic: ``sum(q[idx[b]]) / (n * 2**s)`` (one correctly rounded division of two exact numbers).
* Percentile interval: ``alpha = (1 - 0.95) / 2``; ``numpy.quantile(stats, [alpha, 1 - alpha],
  method="linear")`` (Hyndman and Fan type 7, NumPy's and ``scipy.stats.quantile``'s default).
* Sign flips: ``bits = rng.integers(0, 2, size=(10000, n))``; ``signs = 1 - 2 * bits`` (bit 0 keeps the sign).
  For per-query differences ``dq = qa - qb`` (on the grid), ``T_b = sum(signs[b] * dq)`` and
  ``T_obs = sum(dq)``, both exact integers.
* p-value (two-sided, Phipson and Smyth 2010): ``p = (1 + #{b: |T_b| >= |T_obs|}) / (1 + 10000)``. Identical
  runs give ``dq = 0`` and ``p = 1``. :func:`randomisation_p_exact` enumerates all ``2**n`` sign vectors
  (``p = #{|T| >= |T_obs|} / 2**n``, the identity included) for small ``n``; the Monte Carlo p converges to
  it (tested).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Final

import numpy as np

from analysis.core.plan import BOOTSTRAP_RESAMPLES, CONFIDENCE, RANDOMISATION_RESAMPLES, SEED

__all__ = [
    "BOOTSTRAP_PROCEDURE",
    "P_VALUE_CONVENTION",
    "RNG_ALGORITHM",
    "bootstrap_indices",
    "bootstrap_intervals",
    "bootstrap_means",
    "draw_resamples",
    "linear_quantiles",
    "paired_differences",
    "randomisation_p_exact",
    "randomisation_p_values",
    "sign_matrix",
]

RNG_ALGORITHM: Final = "numpy.random.default_rng(seed): Generator(PCG64)"
BOOTSTRAP_PROCEDURE: Final = (
    "queries in ascending qid order; idx = default_rng(seed).integers(0, n, size=(resamples, n)); "
    "values on the grid rint(x * 2**s), s = 53 - ceil(log2(n)); statistic = sum(q[idx[b]]) / (n * 2**s); "
    "interval = numpy.quantile(stats, [(1 - c) / 2, 1 - (1 - c) / 2], "
    "method='linear'); the same idx for every interval"
)
P_VALUE_CONVENTION: Final = (
    "two-sided paired sign-flip test on per-query differences dq = qa - qb on the grid rint(x * 2**s); "
    "signs = 1 - 2 * default_rng(seed).integers(0, 2, size=(resamples, n)); T_b = sum(signs[b] * dq); "
    "p = (1 + #{|T_b| >= |sum(dq)|}) / (1 + resamples); the same signs for every comparison"
)


def grid_bits(n: int) -> int:
    """``s`` such that sums of ``n`` values of magnitude <= ``2**s`` stay below ``2**53`` (exact)."""
    if n < 1:
        raise ValueError("at least one query is needed")
    return 53 - math.ceil(math.log2(n))


def to_grid(values: np.ndarray, n: int) -> np.ndarray:
    """Per-query values in [-1, 1] as integer-valued float64 on the grid ``rint(x * 2**s)``."""
    x = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(x)) or np.any(np.abs(x) > 1):
        raise ValueError("per-query values must be finite and within [-1, 1]")
    return np.rint(np.ldexp(x, grid_bits(n)))


@lru_cache(maxsize=4)
def bootstrap_indices(n: int, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED) -> np.ndarray:
    """The resample indices (resamples x n), read-only; see the module docstring."""
    idx = _draw_indices(n, resamples, seed)
    idx.flags.writeable = False
    return idx


def _draw_indices(n: int, resamples: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


@lru_cache(maxsize=4)
def _bootstrap_weights(n: int, resamples: int, seed: int) -> np.ndarray:
    # the indices of bootstrap_indices, drawn afresh: made flat in place, and not kept (24 MB for the plan's
    # 10,000 resamples of 305 queries)
    flat = _draw_indices(n, resamples, seed)
    flat += n * np.arange(resamples, dtype=np.int64)[:, None]
    counts = np.bincount(flat.ravel(), minlength=resamples * n).reshape(resamples, n).astype(np.float64)
    counts.flags.writeable = False
    return counts


def bootstrap_means(values: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED) -> np.ndarray:
    """Bootstrap distribution of the mean: ``values`` (n,) -> (resamples,), or (n, k) -> (resamples, k)."""
    values = np.asarray(values, dtype=np.float64)
    n = values.shape[0]
    sums = _bootstrap_weights(n, resamples, seed) @ to_grid(values, n)  # exact integers
    return sums / math.ldexp(n, grid_bits(n))


def percentile_interval(distribution: np.ndarray, confidence: float = CONFIDENCE) -> np.ndarray:
    """Percentile interval along axis 0: returns (2,) or (2, k) = [low, high]."""
    alpha = (1 - confidence) / 2
    return np.quantile(distribution, [alpha, 1 - alpha], axis=0, method="linear")


def bootstrap_intervals(
    values: np.ndarray,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> np.ndarray:
    """Percentile intervals of the mean for each column of ``values`` (n queries x k runs) -> (k, 2)."""
    values = np.asarray(values, dtype=np.float64)
    column = values.ndim == 1
    matrix = values[:, None] if column else values
    n = matrix.shape[0]
    # bootstrap_means transposed, (k, resamples): each run's resample means side by side in memory, so that
    # numpy's quantile partitions them in place along the last axis (no copy, no stride across the runs);
    # the sums are exact integers in any order, so the numbers are those of percentile_interval(means)
    means = to_grid(matrix, n).T @ _bootstrap_weights(n, resamples, seed).T
    means /= math.ldexp(n, grid_bits(n))
    alpha = (1 - confidence) / 2
    interval = linear_quantiles(means, np.array([alpha, 1 - alpha])).T
    return interval[0] if column else interval


def linear_quantiles(rows: np.ndarray, quantiles: np.ndarray) -> np.ndarray:
    """``numpy.quantile(rows, quantiles, axis=1, method="linear", overwrite_input=True)`` bit for bit, for
    finite float64 ``rows`` (k x m, C-contiguous; partitioned in place): (len(quantiles), k).

    The same arithmetic as numpy's: virtual index ``(m - 1) * q``, the order statistics at its floor and the
    next (clipped to the last), and numpy's two-sided lerp (``a + (b - a) * g``, or ``b - (b - a) * (1 - g)``
    where ``g >= 0.5``). Order statistics are values, whichever selection finds them; numpy.quantile also
    places the minimum and maximum (for NaNs, which finite rows lack) and calls numpy.unique, which imports
    numpy.ma (tens of milliseconds of a report's start)."""
    m = rows.shape[1]
    virtual = (m - 1) * quantiles
    low = np.floor(virtual)
    high = low + 1
    low[virtual >= m - 1] = high[virtual >= m - 1] = -1  # the last, as numpy indexes it (gamma too)
    low[virtual < 0] = high[virtual < 0] = 0
    lows, highs = low.astype(np.intp), high.astype(np.intp)
    gamma = (virtual - lows)[:, None]
    rows.partition(sorted({i % m for i in (*lows.tolist(), *highs.tolist())}), axis=1)
    a, b = rows[:, lows].T, rows[:, highs].T
    diff_b_a = b - a
    out = a + diff_b_a * gamma
    np.subtract(b, diff_b_a * (1 - gamma), out=out, where=gamma >= 0.5)
    return out


@lru_cache(maxsize=4)
def sign_matrix(n: int, resamples: int = RANDOMISATION_RESAMPLES, seed: int = SEED) -> np.ndarray:
    """The sign vectors (resamples x n) of +1/-1 as float64, read-only; see the module docstring."""
    bits = np.random.default_rng(seed).integers(0, 2, size=(resamples, n))
    signs = bits.astype(np.float64)
    signs *= -2.0
    signs += 1.0  # 1 - 2 * bits
    signs.flags.writeable = False
    return signs


def draw_resamples(n: int) -> None:
    """Draw (and cache) the bootstrap weights and the sign vectors of ``n`` queries now, exactly as
    :func:`bootstrap_means` and :func:`randomisation_p_values` draw them with the plan's counts and seed
    (the report draws them on a thread while it reads the runs)."""
    _bootstrap_weights(n, BOOTSTRAP_RESAMPLES, SEED)
    sign_matrix(n, RANDOMISATION_RESAMPLES, SEED)


def _p_from(stats: np.ndarray, observed: np.ndarray, extra: int) -> np.ndarray:
    hits = np.count_nonzero(np.abs(stats, out=stats) >= np.abs(observed), axis=0)  # stats: a fresh product
    return (extra + hits) / (extra + stats.shape[0])


def randomisation_p_values(
    differences: np.ndarray, *, resamples: int = RANDOMISATION_RESAMPLES, seed: int = SEED
) -> np.ndarray:
    """Two-sided sign-flip p-values for per-query differences ``a - b``: (n,) -> 0-d array, (n, k) -> (k,).

    Pass the two runs' per-query values to :func:`paired_differences` to get ``differences`` on the grid.
    """
    d = np.asarray(differences, dtype=np.float64)
    n = d.shape[0]
    if np.any(d != np.rint(d)) or np.any(np.abs(d) > math.ldexp(1.0, grid_bits(n))):
        raise ValueError("differences must come from paired_differences() (integers on the grid)")
    stats = sign_matrix(n, resamples, seed) @ d  # exact integers
    return _p_from(stats, d.sum(axis=0), 1)


def paired_differences(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-query differences ``a - b`` on the exact grid (values of a and b in [0, 1], queries aligned)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or np.any((a < 0) | (a > 1) | (b < 0) | (b > 1)):
        raise ValueError("paired values must have the same shape and lie in [0, 1]")
    n = a.shape[0]
    return to_grid(a, n) - to_grid(b, n)


def randomisation_p_exact(differences: np.ndarray, max_n: int = 20) -> float:
    """The exact p-value over all ``2**n`` sign vectors (for small ``n``; the identity is one of them)."""
    d = np.asarray(differences, dtype=np.float64)
    n = d.size
    if np.any(d != np.rint(d)):
        raise ValueError("differences must come from paired_differences() (integers on the grid)")
    if n > max_n:
        raise ValueError(f"exact enumeration of 2**{n} sign vectors is too large (max_n={max_n})")
    codes = np.arange(2**n, dtype=np.int64)[:, None]
    signs = 1.0 - 2.0 * ((codes >> np.arange(n, dtype=np.int64)) & 1)
    return float(_p_from(signs @ d, np.asarray(d.sum()), 0))
