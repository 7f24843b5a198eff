"""Adapter checks (plan section "Adapter checks"): equality against deciding references (check 1) and the
Voyage pointwise check (check 3). Importing this package is cheap (no torch); ``outcome`` is what the
quality phase reads."""

from bench.equality.results import outcome

__all__ = ["outcome"]
