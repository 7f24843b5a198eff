"""Callers: one timed call of a local reranker, turned into a raw sample (plan section "Latency": texts in
to scores out, tokenisation included, model already loaded).

``RerankerCaller`` wraps the timed part of the adapter's call (``bench.rerankers.protocol.score_parts``: the
model's own input tokenisation, the forward passes, the scores out) in the block's timer
(``bench.latency.timer``) and nothing else; the adapter's bookkeeping (token and truncation counts, its call
record) runs after the clock has stopped. A call during which the adapter ran out of memory (and redid the
call with smaller chunks: its ``oom_events`` grew) is measured again: the time of a failed attempt is never
kept. The sample takes chunk size and token counts from the adapter's own call record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analysis.latency import Sample
from bench.latency.harness import Call, Observation
from bench.latency.timer import CallTimer
from bench.rerankers.protocol import Reranker, score_parts


class RerankerCaller:
    def __init__(self, reranker: Reranker, timer: CallTimer) -> None:
        self._reranker = reranker
        self._timer = timer
        self.timer = timer.description
        self.reranker: Mapping[str, Any] | None = reranker.meta.to_dict()
        self.remeasured = 0  # calls timed again because the adapter ran out of memory during them

    def _oom_events(self) -> int:
        return int(getattr(self._reranker, "oom_events", 0))

    def __call__(self, call: Call, *, k: int, pass_: int) -> Observation:
        reranker = self._reranker
        query, passages = call.query, list(call.passages)
        while True:
            before = self._oom_events()
            finish, ns, cuda_ns = self._timer.time(lambda: score_parts(reranker, query, passages))
            if self._oom_events() == before:
                break
            self.remeasured += 1  # the clock covered a failed attempt too: measure the call again
        result = finish()
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
