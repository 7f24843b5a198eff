"""Holm's step-down correction (plan section "Quality": Holm per stage and comparison family, alpha 0.05).

Adjusted p-values: sort the m raw p-values ascending, ``p_(i)``; ``adj_(i) = max_{j <= i} min(1, (m - j + 1)
* p_(j))``; a hypothesis is rejected when its adjusted p-value is <= alpha. This equals statsmodels
``multipletests(method="holm")`` (tested); tied p-values get the same adjusted value, so input order does
not matter.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analysis.core.plan import ALPHA

__all__ = ["holm"]


def holm(p_values: Sequence[float] | np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """(reject, adjusted) for one family, in the input order."""
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError("holm() takes one family: a 1-d sequence of p-values")
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    factors = m - np.arange(m, dtype=np.float64)
    adjusted_sorted = np.maximum.accumulate(np.minimum(1.0, factors * p[order]))
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    return adjusted <= alpha, adjusted
