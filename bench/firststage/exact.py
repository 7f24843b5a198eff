"""Exact (brute-force) cosine search: the reference for the ``ef`` rule of vector-71k.

Vectors are L2-normalised float32, so cosine = dot product. Ties are broken by import order (row order of
``docs``), the same rule as the Typesense stages: a stable sort of the negated scores.
"""

from __future__ import annotations

import numpy as np

from bench.core.errors import BenchError


def exact_top_k(queries: np.ndarray, docs: np.ndarray, k: int, *, block: int = 64) -> np.ndarray:
    """Row indices of the ``k`` most similar docs per query, best first, ties by lower row index."""
    if queries.ndim != 2 or docs.ndim != 2 or queries.shape[1] != docs.shape[1]:
        raise BenchError(
            f"exact search: query shape {queries.shape} does not fit document shape {docs.shape}"
        )
    k = min(k, docs.shape[0])
    out = np.empty((queries.shape[0], k), dtype=np.int64)
    d = np.ascontiguousarray(docs, dtype=np.float32)
    for start in range(0, queries.shape[0], block):
        scores = np.ascontiguousarray(queries[start : start + block], dtype=np.float32) @ d.T
        # stable argsort of -score keeps equal scores in row (import) order
        out[start : start + block] = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return out


def overlap_at_k(found: list[list[str]], exact: list[list[str]], k: int) -> float:
    """Mean over queries of |top-k found ∩ top-k exact| / |top-k exact| (the plan's "top-100 overlap"; the
    exact list is shorter than k only when the corpus has fewer than k passages)."""
    if len(found) != len(exact) or not found or any(not e for e in exact):
        raise BenchError("overlap needs the same, non-zero number of queries and non-empty exact lists")
    return float(
        np.mean([len(set(f[:k]) & set(e[:k])) / len(e[:k]) for f, e in zip(found, exact, strict=True)])
    )
