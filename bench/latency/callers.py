"""Callers: one timed call of a local reranker, turned into a raw sample (plan section "Latency": texts in
to scores out, tokenisation included, model already loaded).

``RerankerCaller`` wraps ``reranker.score`` in the block's timer (``bench.latency.timer``) and nothing else;
the sample takes chunk size and token counts from the adapter's own call record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analysis.latency import Sample
from bench.latency.harness import Call, Observation
from bench.latency.timer import CallTimer
from bench.rerankers.protocol import Reranker


class RerankerCaller:
    def __init__(self, reranker: Reranker, timer: CallTimer) -> None:
        self._reranker = reranker
        self._timer = timer
        self.timer = timer.description
        self.reranker: Mapping[str, Any] | None = reranker.meta.to_dict()

    def __call__(self, call: Call, *, k: int, pass_: int) -> Observation:
        score = self._reranker.score
        query, passages = call.query, list(call.passages)
        result, ns, cuda_ns = self._timer.time(lambda: score(query, passages))
        rec = result.record
        sample = Sample(
            query_id=call.query_id,
            k=k,
            pass_=pass_,
            ns=ns,
            cuda_ns=cuda_ns,
            chunk_size=rec["chunk_size"],
            n_passages=rec["n"],
            input_tokens=rec.get("input_tokens"),
            max_input_tokens=rec["max_input_tokens"],
        )
        return Observation(sample, result.scores)
