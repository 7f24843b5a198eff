"""Which queries a latency block measures, in which order (plan section "Latency": before each k, 20
warm-up calls on the first 20 queries, discarded; then every query; CPU: a fixed sample of 100 queries,
seed 20261009, its ids recorded).

Procedures (recorded with every block through its seed and id lists):
- ``plan_order``: query ids sorted (MIRACL ids sort as text, the order every run file uses).
- ``fixed_sample(ids, n, seed)``: ``numpy.random.default_rng(seed).choice(plan_order(ids), n,
  replace=False)``, then sorted: the sample is a set; its order is decided by ``seeded_order``.
- ``seeded_order(ids, seed)``: ``numpy.random.default_rng(seed).permutation(plan_order(ids))``: the
  measured order, the same for every model, k and pass of a run, so no model is always timed first.
- ``warmup_ids(ids, n)``: the first ``n`` of ``plan_order(ids)`` ("the first 20 queries").
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from bench.core.errors import BenchError


def plan_order(ids: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(ids)))


def fixed_sample(ids: Iterable[str], n: int, seed: int) -> tuple[str, ...]:
    pool = plan_order(ids)
    if n > len(pool):
        raise BenchError(f"a sample of {n} queries was asked for, but only {len(pool)} queries exist")
    chosen = np.random.default_rng(seed).choice(len(pool), size=n, replace=False)
    return tuple(sorted(pool[int(i)] for i in chosen))


def seeded_order(ids: Iterable[str], seed: int) -> tuple[str, ...]:
    pool = plan_order(ids)
    perm = np.random.default_rng(seed).permutation(len(pool))
    return tuple(pool[int(i)] for i in perm)


def warmup_ids(ids: Iterable[str], n: int) -> tuple[str, ...]:
    return plan_order(ids)[:n]
