"""Shared machinery of the local (torch) adapters: dtype choice, chunked forward passes, records.

Plan section "Rerankers": all k candidates go through one forward pass where memory allows, otherwise
in chunks whose size is recorded. A CUDA out-of-memory error halves the chunk and retries the whole
call (never a partial result); the halved size is kept for later calls and shows in every record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.errors import BenchError
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
    """A chunk's model-ready features and, per pair, the real input length and whether it was cut."""

    features: dict[str, Any]
    lengths: list[int]
    truncated: list[bool]


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

    def score(self, query: str, passages: Sequence[str]) -> ScoreResult:
        # lazy: torch is heavy and is needed only here
        import torch

        items = list(passages)
        if not items:
            return self.log.add(make_result([], max_input_tokens=0, truncated_pairs=0, chunk_size=0))
        while True:
            size = min(self._chunk_size or len(items), len(items))
            try:
                scores, lengths, cut = self._run(query, items, size)
                break
            except torch.cuda.OutOfMemoryError:
                if size <= 1:
                    raise
                torch.cuda.empty_cache()
                self._chunk_size = max(1, size // 2)
        return self.log.add(
            make_result(
                scores,
                max_input_tokens=max(lengths),
                truncated_pairs=sum(cut),
                chunk_size=size,
                input_tokens=sum(lengths),
            )
        )

    def _run(self, query: str, items: list[str], size: int) -> tuple[np.ndarray, list[int], list[bool]]:
        # lazy: torch is heavy and is needed only here
        import torch

        parts: list[np.ndarray] = []
        lengths: list[int] = []
        cut: list[bool] = []
        with torch.inference_mode():
            for start in range(0, len(items), size):
                chunk = self._chunk(query, items[start : start + size])
                out = self._forward(chunk.features)
                # Upcast before leaving torch: bf16/fp16 logits collapse into ties (field notes, mteb#4934).
                parts.append(out.detach().float().reshape(-1).cpu().numpy())
                lengths.extend(chunk.lengths)
                cut.extend(chunk.truncated)
        return np.concatenate(parts).astype(np.float32), lengths, cut


def to_device(features: dict[str, Any], device: str) -> dict[str, Any]:
    # lazy: torch is heavy and is needed only here
    import torch

    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}


Forward = Callable[[dict[str, Any]], Any]
