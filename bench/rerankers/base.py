"""Shared machinery of the local (torch) adapters: dtype choice, chunked forward passes, records.

Plan section "Rerankers": all k candidates go through one forward pass where memory allows, otherwise
in chunks whose size is recorded. A CUDA out-of-memory error halves the chunk and retries the whole
call (never a partial result); the halved size is kept for later calls and shows in every record. The
recovery (collect, empty the CUDA cache, halve) runs after the ``except`` block has ended: inside it the
traceback still holds the failed pass's activations. Every such retry counts in ``oom_events``, so a timer
around the call can see that it timed a failed attempt too (``bench.latency.callers``). The latency phase
settles one chunk size per model before its first block (``settle_chunk_size``, ``fix_chunk_size``).

The timed unit: ``score_timed`` does what the plan times (the model's own input
tokenisation, the forward passes, the scores out) and returns the rest, the study's bookkeeping (input
lengths, truncation counts, the call record), as a function the caller runs after its clock has stopped
(``bench.rerankers.protocol.score_parts``). ``score`` is both in one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bench.core.errors import BenchError
from bench.core.memory import empty_device_cache
from bench.rerankers.protocol import RecordLog, RerankerMeta, ScoreResult, make_result

# Vendor-recommended dtype on a GPU. Sources: gte model card (``torch_dtype=torch.float16``); bge model
# card (FlagReranker ``use_fp16=True``); Qwen3-Reranker model card (float16 with flash attention
# recommended); mxbai-rerank 0.1.6 (``torch_dtype="auto"``); jina model card (``dtype="auto"``); mteb
# 2.24.3 QueritWrapper (``fp_options="bfloat16"``). "auto" means the dtype saved in the snapshot's
# config.json. On CPU every model runs in float32 (the plan's data type check compares desktop CPU
# fp32 against GPU). The dtype actually loaded is recorded in ``RerankerMeta.dtype``.
VENDOR_DTYPE: dict[str, str] = {
    "gte-base": "float16",
    "bge-v2-m3": "float16",
    "jina-v3.5": "auto",
    "qwen3-0.6b": "float16",
    "qwen3-4b": "float16",
    "mxbai-large-v2": "auto",
    "querit-4b": "bfloat16",
}


def choose_dtype(model_id: str, device: str, dtype: str | None) -> str:
    """Explicit dtype wins; else the vendor's on CUDA and float32 elsewhere."""
    if dtype is not None:
        return dtype
    if device.startswith("cuda"):
        return VENDOR_DTYPE.get(model_id, "float32")
    return "float32"


def torch_dtype(name: str) -> Any:
    # lazy: torch is heavy and is needed only here
    import torch

    if name == "auto":
        return "auto"
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise BenchError(f"Unknown dtype {name!r}; use float32, float16, bfloat16 or auto")
    return value


def dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass
class Chunk:
    """A chunk's model-ready features and, per pair, the real input length and whether it was cut; or,
    instead of the two lists, ``count``: a function that gives them after the timed call (bookkeeping that
    would otherwise be timed as model latency, such as tokenising a pair again without truncation)."""

    features: dict[str, Any]
    lengths: list[int] | None = None
    truncated: list[bool] | None = None
    count: Callable[[], tuple[list[int], list[bool]]] | None = None

    def counts(self) -> tuple[list[int], list[bool]]:
        if self.count is not None:
            return self.count()
        assert self.lengths is not None and self.truncated is not None  # for mypy: one of the two is given
        return self.lengths, self.truncated


class ChunkedTorchReranker:
    """Base of the pointwise torch adapters: subclasses implement ``_chunk`` and ``_forward``."""

    def __init__(self, meta: RerankerMeta) -> None:
        self._meta = meta
        self._chunk_size: int | None = meta.chunk_size
        self.log = RecordLog()

    @property
    def meta(self) -> RerankerMeta:
        return self._meta

    def _chunk(self, query: str, passages: Sequence[str]) -> Chunk:
        raise NotImplementedError

    def _forward(self, features: dict[str, Any]) -> Any:
        """Scores of one chunk as a 1-d torch tensor (any float dtype; upcast happens here)."""
        raise NotImplementedError

    @property
    def chunk_size(self) -> int | None:
        """Pairs per forward pass now in effect (None: all k in one pass)."""
        return self._chunk_size

    def fix_chunk_size(self, size: int | None) -> None:
        """Use ``size`` pairs per forward pass from now on (a settled or recorded size)."""
        self._chunk_size = size

    def settle_chunk_size(self, query: str, passages: Sequence[str]) -> int:
        """Score one (the longest) call untimed, halving on out of memory until it fits; keep and return the
        size it ran with."""
        result = self.score_timed(query, passages)()
        self._chunk_size = result.record["chunk_size"]
        return self._chunk_size

    def score(self, query: str, passages: Sequence[str]) -> ScoreResult:
        return self.score_timed(query, passages)()

    def score_timed(self, query: str, passages: Sequence[str]) -> Callable[[], ScoreResult]:
        """The timed part of one call (see the module's docstring); returns the bookkeeping part."""
        # lazy: torch is heavy and is needed only here
        import torch

        items = list(passages)
        if not items:
            empty = make_result([], max_input_tokens=0, truncated_pairs=0, chunk_size=0)
            return lambda: self.log.add(empty)
        while True:
            size = min(self._chunk_size or len(items), len(items))
            try:
                scores, chunks = self._run(query, items, size)
                break
            except torch.OutOfMemoryError:
                if size <= 1:
                    raise
            # outside the except: the failed pass's traceback (and the activations it holds) is gone
            self._after_out_of_memory(size)

        def finish() -> ScoreResult:
            lengths: list[int] = []
            cut: list[bool] = []
            for chunk in chunks:
                n, t = chunk.counts()
                lengths += n
                cut += t
            return self.log.add(
                make_result(
                    scores,
                    max_input_tokens=max(lengths),
                    truncated_pairs=sum(cut),
                    chunk_size=size,
                    input_tokens=sum(lengths),
                )
            )

        return finish

    oom_events = 0  # calls redone with halved chunks after running out of memory, in this adapter's life

    def _after_out_of_memory(self, size: int) -> None:
        empty_device_cache()
        self._chunk_size = max(1, size // 2)
        self.oom_events += 1

    def _run(self, query: str, items: list[str], size: int) -> tuple[np.ndarray, list[Chunk]]:
        """Scores of every chunk and each chunk's bookkeeping (its features dropped)."""
        # lazy: torch is heavy and is needed only here
        import torch

        parts: list[np.ndarray] = []
        done: list[Chunk] = []
        with torch.inference_mode():
            for start in range(0, len(items), size):
                chunk = self._chunk(query, items[start : start + size])
                out = self._forward(chunk.features)
                # Upcast before leaving torch: bf16/fp16 logits collapse into ties (field notes, mteb#4934).
                parts.append(out.detach().float().reshape(-1).cpu().numpy())
                done.append(replace(chunk, features={}))
        return np.concatenate(parts).astype(np.float32), done


def to_device(features: dict[str, Any], device: str) -> dict[str, Any]:
    # lazy: torch is heavy and is needed only here
    import torch

    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}


Forward = Callable[[dict[str, Any]], Any]
