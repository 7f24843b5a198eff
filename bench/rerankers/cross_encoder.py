"""Encoder cross-encoders through sentence-transformers' CrossEncoder: bge-v2-m3 and gte-base.

Plan section "Rerankers". Inputs are built by ``CrossEncoder.preprocess`` (the library's own pair
tokenisation: ``truncation="longest_first"`` at the model's maximum length, as the model cards'
``tokenizer(pairs, truncation=True, max_length=512)`` does) and scored by the CrossEncoder's modules.
The per-pair input length is the attention mask's sum (special tokens included); a pair counts as
truncated when its untruncated tokenisation is longer than the maximum. Both are counted after the timed
call (``Chunk.count``): the second tokenisation is the study's bookkeeping, not the model's latency.

Score: bge and gte are not "raw logit" models in the plan, so the CrossEncoder's default activation
(sigmoid for one label) is applied, in fp32 after the upcast. Sigmoid is monotone; ties it creates
by saturation are counted in every record.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.core.paths import models_dir
from bench.rerankers.base import Chunk, ChunkedTorchReranker, dtype_name, to_device, torch_dtype
from bench.rerankers.protocol import RerankerMeta

MAX_LENGTH: dict[str, int] = {"bge-v2-m3": 512, "gte-base": 512}  # the model cards' max_length


class EncoderCrossEncoder(ChunkedTorchReranker):
    def __init__(self, meta: RerankerMeta, model: Any, *, apply_activation: bool = True) -> None:
        super().__init__(meta)
        self.model = model
        self.apply_activation = apply_activation
        self.tokenizer = model.tokenizer
        self.max_length = int(meta.max_length or self.tokenizer.model_max_length)

    def _chunk(self, query: str, passages: Sequence[str]) -> Chunk:
        pairs = [(query, p) for p in passages]
        features = self.model.preprocess(pairs)
        mask = features["attention_mask"]  # on the CPU, as the tokenizer made it

        def count() -> tuple[list[int], list[bool]]:
            """After the timed call: lengths from the mask, and the untruncated tokenisation of the pairs that
            reached the maximum (the plan times the model's input tokenisation, not this counter's)."""
            lengths = [int(x) for x in mask.sum(dim=1).tolist()]
            truncated = [False] * len(pairs)
            for i, n in enumerate(lengths):
                if n >= self.max_length:  # only a full-length input can have been cut
                    full = self.tokenizer(query, pairs[i][1], truncation=False)["input_ids"]
                    truncated[i] = len(full) > self.max_length
            return lengths, truncated

        return Chunk(to_device(features, self.meta.device), count=count)

    def _forward(self, features: dict[str, Any]) -> Any:
        scores = self.model(features)["scores"].float()
        if self.apply_activation and self.model.activation_fn is not None:
            scores = self.model.activation_fn(scores)
        return scores.reshape(-1)


def load_cross_encoder(
    path: Path,
    *,
    max_length: int,
    device: str,
    dtype: str,
    trust_remote_code: bool = False,
    code_revision: str | None = None,
) -> Any:
    """A CrossEncoder loaded from a local snapshot only (no hub access)."""
    # lazy: sentence-transformers pulls torch; only when a model is loaded
    from sentence_transformers import CrossEncoder

    extra: dict[str, Any] = {"code_revision": code_revision} if code_revision else {}
    model = CrossEncoder(
        str(path),
        device=device,
        trust_remote_code=trust_remote_code,
        local_files_only=True,
        # where transformers finds remote code referenced as "Org/repo--module.Class" (gte's new-impl)
        cache_folder=str(models_dir()),
        max_length=max_length,
        model_kwargs={"dtype": torch_dtype(dtype), **extra},
        config_kwargs=dict(extra),
        processor_kwargs=dict(extra),  # AutoProcessor reads the config (and its auto_map) again
    )
    model.eval()
    return model


def model_dtype(model: Any) -> str:
    return dtype_name(next(model.parameters()).dtype)
