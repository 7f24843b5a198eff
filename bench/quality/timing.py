"""One timed adapter call, and latency percentiles (plan section "Latency": monotonic clock, GPU synced).

The unit is the plan's: one query with k candidates, texts in, scores out, tokenisation included, model
already loaded. The clock is ``time.perf_counter_ns``; on a CUDA device ``torch.cuda.synchronize()`` runs
before the start and before the stop, so queued kernels of an earlier call are not billed to this one and
this call's kernels are finished when the clock stops. A call that raises has no latency (``None``): an
interrupted or failed attempt never gets a number.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench.rerankers.protocol import Reranker, ScoreResult, score_parts

PERCENTILE_METHOD = "numpy.percentile, method 'linear' (interpolates between closest ranks)"


def _synchronizer(device: str) -> Callable[[], None]:
    if not device.startswith("cuda"):
        return lambda: None
    import torch  # only on GPU runs

    return torch.cuda.synchronize


def timed_score(reranker: Reranker, query: str, passages: Sequence[str]) -> tuple[ScoreResult, int]:
    """``(result, latency in ns)`` of ``reranker.score(query, passages)``; exceptions propagate unchanged. The
    clock covers the call's timed part only; its bookkeeping runs after (``score_parts``)."""
    sync = _synchronizer(reranker.meta.device)
    sync()
    start = time.perf_counter_ns()
    finish = score_parts(reranker, query, passages)
    sync()
    latency = time.perf_counter_ns() - start
    return finish(), latency


def percentiles_ms(latencies_ns: Sequence[int], qs: Sequence[int] = (50, 95)) -> dict[str, Any]:
    """``{"n": .., "p50_ms": .., "p95_ms": ..}`` of the given latencies (empty: values None)."""
    out: dict[str, Any] = {"n": len(latencies_ns)}
    arr = np.asarray(latencies_ns, dtype=np.float64) / 1e6
    for q in qs:
        out[f"p{q}_ms"] = float(np.percentile(arr, q, method="linear")) if arr.size else None
    return out
