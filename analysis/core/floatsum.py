"""One defined float order for every sum and mean that reaches a written number.

Python 3.12 made the builtin ``sum()`` of floats compensated (Neumaier), and ``statistics`` and ``math.fsum``
round differently again: the same floats summed with them give other last digits on 3.11 than on 3.12+.
Every float sum on the path from run files, qrels, records and prices.toml to a file is either numpy's
(``np.sum``, ``np.mean``, ``np.bincount``, ``@``: numpy's own order, the same on every Python for the locked
numpy) or :func:`ltr_sum` here: plain ``+`` from left to right, which is what 3.11's ``sum()`` did, so the
bytes written on 3.11 before this module existed are unchanged. ``tests/hygiene/test_float_order.py``
refuses a bare ``sum()`` over floats, ``statistics`` averages and ``math.fsum`` in ``analysis`` and ``bench``.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["ltr_mean", "ltr_sum"]


def ltr_sum(values: Iterable[float], start: float = 0.0) -> float:
    """``start + v1 + v2 + ...``, each addition rounded in turn (Python 3.11's ``sum()`` of floats)."""
    total = float(start)
    for v in values:
        total += v
    return total


def ltr_mean(values: Iterable[float]) -> float:
    """:func:`ltr_sum` divided by the count; ValueError for no values (a mean of nothing is not 0)."""
    items = list(values)
    if not items:
        raise ValueError("mean of no values")
    return ltr_sum(items) / len(items)
