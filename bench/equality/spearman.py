"""Spearman rank correlation for adapter check 1 (plan: Adapter checks, "Spearman >= 0.99 per query").

Own implementation so that ``bench`` needs no scipy at run time; ``tests/equality/test_spearman.py``
checks it against ``scipy.stats.spearmanr`` including ties. Ties get the average of the ranks they span
(the "fractional" ranking scipy uses), and the coefficient is the Pearson correlation of those ranks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def average_ranks(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """1-based ranks; tied values share the mean of the ranks they occupy."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"expected a 1-d sequence, got shape {x.shape}")
    if np.isnan(x).any():
        raise ValueError("NaN score: a rank correlation of NaN scores is undefined")
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    ranks = np.empty(len(x), dtype=np.float64)
    start = 0
    n = len(x)
    while start < n:
        end = start + 1
        while end < n and sorted_x[end] == sorted_x[start]:
            end += 1
        ranks[order[start:end]] = (start + 1 + end) / 2.0  # mean of ranks start+1 .. end
        start = end
    return ranks


def spearman(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Spearman's rho of two equally long score lists.

    Returns NaN when either side is constant (the coefficient is undefined; the check treats NaN as a fail).
    """
    ra = average_ranks(a)
    rb = average_ranks(b)
    if len(ra) != len(rb):
        raise ValueError(f"length mismatch: {len(ra)} vs {len(rb)} scores")
    if len(ra) < 2:
        raise ValueError("Spearman needs at least two scores")
    da = ra - ra.mean()
    db = rb - rb.mean()
    denom = math.sqrt(float(np.dot(da, da)) * float(np.dot(db, db)))
    if denom == 0.0:
        return float("nan")
    rho = float(np.dot(da, db)) / denom
    return max(-1.0, min(1.0, rho))
