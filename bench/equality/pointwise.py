"""Check 3: do Voyage scores count as pointwise? (plan: Adapter checks 3)

The same candidates are scored once as the first 20 of a list and once within the full list of 100; the
scores count as pointwise only if every candidate's two scores agree within 0.001. Otherwise the quality
phase requests every depth separately (``outcome(...)["pointwise"]``). Billed tokens and every HTTP attempt
are kept in the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bench.core.plan import VOYAGE_POINTWISE_DEPTHS, VOYAGE_POINTWISE_TOLERANCE
from bench.core.progress import Progress
from bench.equality.data import EqualityQuery
from bench.rerankers.protocol import Reranker


def run_pointwise(
    model_id: str,
    reranker: Reranker,
    queries: Sequence[EqualityQuery],
    *,
    depths: tuple[int, int] = VOYAGE_POINTWISE_DEPTHS,
    tolerance: float = VOYAGE_POINTWISE_TOLERANCE,
) -> dict[str, Any]:
    small, large = depths
    rows: list[dict[str, Any]] = []
    with Progress(f"pointwise check {model_id}", len(queries), "queries") as progress:
        for q in queries:
            if len(q.passages) < large:
                raise ValueError(f"query {q.qid} has {len(q.passages)} candidates, check 3 needs {large}")
            a = reranker.score(q.query, list(q.passages[:small])).scores.astype(np.float64)
            b = reranker.score(q.query, list(q.passages[:large])).scores.astype(np.float64)[:small]
            diff = np.abs(a - b)
            rows.append(
                {
                    "qid": q.qid,
                    "max_abs_diff": float(diff.max()),
                    "docid_max_diff": q.docids[int(diff.argmax())],
                    "within_tolerance": bool(diff.max() <= tolerance),
                }
            )
            progress.advance()
    pointwise = all(r["within_tolerance"] for r in rows)
    calls = getattr(reranker, "calls", [])
    return {
        "model": model_id,
        "check": "Voyage pointwise (check 3)",
        "depths": list(depths),
        "tolerance": tolerance,
        "pointwise": pointwise,
        "rated": True,
        "verdict": "rated",
        "reason": (
            f"scores of the first {small} candidates agree within {tolerance} at k={small} and "
            f"k={large} on all {len(rows)} queries: pointwise, depths derived from k={large}"
            if pointwise
            else f"scores differ by more than {tolerance} between k={small} and k={large}: every depth is "
            "requested separately"
        ),
        "max_abs_diff": max((float(r["max_abs_diff"]) for r in rows), default=None),
        "queries": rows,
        "adapter": reranker.meta.to_dict(),
        "billed_tokens": sum(c.get("billed_tokens", 0) for c in calls),
        "api_calls": calls,
    }
