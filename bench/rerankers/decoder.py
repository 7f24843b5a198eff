"""Decoder (causal LM) rerankers through sentence-transformers' CrossEncoder: Qwen3-Reranker, mxbai v2.

Plan section "Rerankers" ("sentence-transformers CrossEncoder, raw logit score") and "Pitfalls
experiment". The CrossEncoder is built from explicit modules, ``Transformer(text-generation)`` and
``LogitScore(true, false)``, so the score is the raw last-position logit difference
``logit(true) - logit(false)`` whatever sentence-transformers files a snapshot carries. The token ids
are built here, exactly in each vendor's format, because the format decides the score:

* Qwen3-Reranker (model card, "Transformers usage"): system prefix + user turn, body
  ``"<Instruct>: {instruction}\\n<Query>: {query}\\n<Document>: {doc}"`` tokenised and cut from the
  end to ``max_length - len(prefix) - len(suffix)`` (so only the passage loses tokens), then the
  assistant suffix with an empty think block; true/false tokens "yes"/"no"; left padding. The card's
  score is softmax over (no, yes); the plan asks for the raw logit, which ranks identically. (The card
  tokenises the body with the tokenizer's defaults; Qwen's tokenizer adds no special tokens, so
  ``add_special_tokens=False`` here gives the same ids.)
* mxbai-rerank v2 (vendor package ``mxbai-rerank==0.1.6``, ``MxbaiRerankV2.prepare_inputs``): chat
  prefix, ``"query: {q}"`` cut to ``max_length*3//4`` tokens, ``"\\n" + "document: {d}"`` cut so the pair
  fits ``max_length`` (8192), then ``"\\n"`` + task prompt + chat suffix; true/false tokens "1"/"0";
  left padding. Score ``logit("1") - logit("0")`` as the package's ``forward``.

Deliberately wrong variants (pitfalls experiment, and the equality checks' proof that they catch a
broken adapter): ``right-padding`` (the last position is a pad token), ``whole-input-truncation`` (the
whole input cut at ``max_length``, losing the yes/no suffix) and ``no-instruction`` (empty instruction).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bench.core.errors import BenchError
from bench.core.plan import PITFALL_MAX_LENGTH, PITFALL_RUN_IDS
from bench.rerankers.base import Chunk, ChunkedTorchReranker, to_device, torch_dtype
from bench.rerankers.protocol import RerankerMeta

Variant = Literal["correct", "right-padding", "whole-input-truncation", "no-instruction"]
VARIANTS: tuple[str, ...] = ("correct", "right-padding", "whole-input-truncation", "no-instruction")


@dataclass(frozen=True)
class PitfallVariant:
    """One declared configuration of the Qwen3 adapter for the plan's pitfalls experiment."""

    run_id: str  # model id of its runs (analysis.core.plan.PITFALL_RUN_IDS)
    letter: str  # the plan's (a), (b), (c), (d1), (d2)
    variant: str  # DecoderFormat variant
    max_length: int | None  # None: the model card's default
    description: str

    def load_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``load_reranker(PITFALL_MODEL, ...)`` for this configuration."""
        return {"variant": self.variant, "max_length": self.max_length}


# Plan "Pitfalls experiment" (model PITFALL_MODEL on PITFALL_STAGE), in the plan's order.
PITFALL_VARIANTS: dict[str, PitfallVariant] = {
    v.run_id: v
    for v in (
        PitfallVariant(PITFALL_RUN_IDS[0], "a", "correct", None, "correct per the model card"),
        PitfallVariant(PITFALL_RUN_IDS[1], "b", "no-instruction", None, "empty instruction"),
        PitfallVariant(PITFALL_RUN_IDS[2], "c", "right-padding", None, "right padding"),
        PitfallVariant(
            PITFALL_RUN_IDS[3],
            "d1",
            "correct",
            PITFALL_MAX_LENGTH,
            f"maximum length {PITFALL_MAX_LENGTH}, correct truncation (passage only)",
        ),
        PitfallVariant(
            PITFALL_RUN_IDS[4],
            "d2",
            "whole-input-truncation",
            PITFALL_MAX_LENGTH,
            f"maximum length {PITFALL_MAX_LENGTH}, wrong truncation (end of the whole input cut, yes/no "
            "suffix lost)",
        ),
    )
}
if tuple(PITFALL_VARIANTS) != PITFALL_RUN_IDS:  # pragma: no cover - a typo in this table
    raise RuntimeError("PITFALL_VARIANTS must declare exactly analysis.core.plan.PITFALL_RUN_IDS")

QWEN3_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the "
    'Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
)
QWEN3_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
QWEN3_MAX_LENGTH = 8192  # model card default

MXBAI_PREFIX = (
    "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
    "<|im_start|>user\n"
)
MXBAI_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n"
MXBAI_TASK = (
    "You are a search relevance expert who evaluates how well documents match search queries. For each "
    "query-document pair, carefully analyze the semantic relationship between them, then provide your "
    "binary relevance judgment (0 for not relevant, 1 for relevant).\nRelevance:"
)
MXBAI_MAX_LENGTH = 8192  # vendor package default


@dataclass(frozen=True)
class Pair:
    ids: list[int]
    truncated: bool


class DecoderFormat:
    """Builds one pair's token ids in a vendor format."""

    true_token: str = "yes"
    false_token: str = "no"

    def __init__(self, tokenizer: Any, max_length: int, variant: str = "correct") -> None:
        if variant not in VARIANTS:
            raise BenchError(f"Unknown adapter variant {variant!r}; choose one of {', '.join(VARIANTS)}")
        self.tok = tokenizer
        self.max_length = max_length
        self.variant = variant

    def ids(self, text: str, **kw: Any) -> list[int]:
        return list(self.tok(text, add_special_tokens=False, **kw)["input_ids"])

    def ids_many(self, texts: list[str]) -> list[list[int]]:
        """``ids`` of each text, from one call of the tokenizer (a fast tokenizer's batch gives each text the
        ids it gives alone: no padding, no truncation; one call per pair cost ~0.1 ms of Python each)."""
        return [list(ids) for ids in self.tok(texts, add_special_tokens=False)["input_ids"]] if texts else []

    def pair(self, query: str, passage: str) -> Pair:
        raise NotImplementedError

    def pairs(self, query: str, passages: Sequence[str]) -> list[Pair]:
        """``pair(query, p)`` of each passage (the formats tokenise the passages in one call)."""
        return [self.pair(query, p) for p in passages]


class Qwen3Format(DecoderFormat):
    def __init__(
        self, tokenizer: Any, max_length: int, variant: str = "correct", *, instruction: str
    ) -> None:
        super().__init__(tokenizer, max_length, variant)
        self.instruction = "" if variant == "no-instruction" else instruction
        self.prefix = self.ids(QWEN3_PREFIX)
        self.suffix = self.ids(QWEN3_SUFFIX)
        self.budget = max_length - len(self.prefix) - len(self.suffix)
        self._head_len: dict[str, int] = {}

    def _head(self, query: str) -> str:
        return f"<Instruct>: {self.instruction}\n<Query>: {query}\n<Document>: "

    def pair(self, query: str, passage: str) -> Pair:
        head = self._head(query)
        return self._pair(query, head, self.ids(head + passage))

    def pairs(self, query: str, passages: Sequence[str]) -> list[Pair]:
        head = self._head(query)
        return [self._pair(query, head, body) for body in self.ids_many([head + p for p in passages])]

    def _pair(self, query: str, head: str, body: list[int]) -> Pair:
        if self.variant == "whole-input-truncation":
            full = self.prefix + body + self.suffix
            return Pair(full[: self.max_length], len(full) > self.max_length)
        if query not in self._head_len:
            self._head_len[query] = len(self.ids(head))
        if self._head_len[query] >= self.budget:
            raise BenchError(
                f"Qwen3 input: instruction and query alone need {self._head_len[query]} tokens, more than "
                f"the "
                f"{self.budget} left for the body at max_length {self.max_length}; the query would be cut"
            )
        return Pair(self.prefix + body[: self.budget] + self.suffix, len(body) > self.budget)


class MxbaiFormat(DecoderFormat):
    true_token = "1"
    false_token = "0"

    def __init__(self, tokenizer: Any, max_length: int, variant: str = "correct", *, model_max: int) -> None:
        super().__init__(tokenizer, max_length, variant)
        self.prefix = self.ids(MXBAI_PREFIX)
        self.sep = self.ids("\n")
        self.task = self.ids(MXBAI_TASK)
        self.suffix = self.ids(MXBAI_SUFFIX)
        fixed = len(self.prefix) + len(self.task) + len(self.suffix) + len(self.sep)
        self.model_max = model_max
        self.fixed = fixed
        # the package lowers max_length when template + max_length would exceed the model's positions
        self.max_length = min(max_length, model_max - fixed)

    def pair(self, query: str, passage: str) -> Pair:
        return self._pair(self.ids(f"query: {query}"), self.ids(f"document: {passage}"))

    def pairs(self, query: str, passages: Sequence[str]) -> list[Pair]:
        q_full = self.ids(f"query: {query}")
        return [self._pair(q_full, d_full) for d_full in self.ids_many([f"document: {p}" for p in passages])]

    def _pair(self, q_full: list[int], d_full: list[int]) -> Pair:
        q = q_full[: self.max_length * 3 // 4]
        d = d_full[: min(self.model_max - len(q) - self.fixed, self.max_length)]
        second = self.sep + d
        body = q + second[: max(0, self.max_length - len(q))]
        cut = len(q) < len(q_full) or len(d) < len(d_full) or len(body) < len(q) + len(second)
        if self.variant == "whole-input-truncation":
            full = self.prefix + q_full + self.sep + d_full + self.sep + self.task + self.suffix
            return Pair(full[: self.max_length], len(full) > self.max_length)
        return Pair(self.prefix + body + self.sep + self.task + self.suffix, cut)


class DecoderCrossEncoder(ChunkedTorchReranker):
    def __init__(self, meta: RerankerMeta, model: Any, fmt: DecoderFormat) -> None:
        super().__init__(meta)
        self.model = model
        self.fmt = fmt
        tok = fmt.tok
        if tok.pad_token_id is None:
            raise BenchError(f"Model {meta.id}: the tokenizer has no pad token; left padding needs one")
        self.pad_id = int(tok.pad_token_id)
        self.side = "right" if fmt.variant == "right-padding" else "left"

    def _chunk(self, query: str, passages: Sequence[str]) -> Chunk:
        # lazy: torch is heavy and is needed only here
        import torch

        pairs = self.fmt.pairs(query, passages)
        width = max(len(p.ids) for p in pairs)
        ids = torch.full((len(pairs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(pairs), width), dtype=torch.long)
        for i, p in enumerate(pairs):
            n = len(p.ids)
            cols = slice(width - n, width) if self.side == "left" else slice(0, n)
            ids[i, cols] = torch.tensor(p.ids, dtype=torch.long)
            mask[i, cols] = 1
        features = {"input_ids": ids, "attention_mask": mask, "logits_to_keep": 1, "modality": "text"}
        return Chunk(
            to_device(features, self.meta.device), [len(p.ids) for p in pairs], [p.truncated for p in pairs]
        )

    def _forward(self, features: dict[str, Any]) -> Any:
        return self.model(features)["scores"].reshape(-1)


def load_decoder_cross_encoder(
    path: Path, *, device: str, dtype: str, true_token: str, false_token: str
) -> Any:
    """CrossEncoder([Transformer(text-generation), LogitScore(true, false)]) from a local snapshot."""
    # lazy: sentence-transformers pulls torch; only when a model is loaded
    from sentence_transformers import CrossEncoder
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.cross_encoder.modules import LogitScore

    local = {"local_files_only": True}
    transformer = Transformer(
        str(path),
        transformer_task="text-generation",
        model_kwargs={**local, "dtype": torch_dtype(dtype)},
        processor_kwargs=dict(local),
        config_kwargs=dict(local),
    )
    tok = transformer.tokenizer
    ids = [tok.convert_tokens_to_ids(t) for t in (true_token, false_token)]
    if any(i is None or i == tok.unk_token_id for i in ids):
        raise BenchError(f"{path}: tokenizer lacks the score tokens {true_token!r}/{false_token!r}")
    model = CrossEncoder(
        modules=[transformer, LogitScore(true_token_id=ids[0], false_token_id=ids[1])], device=device
    )
    model.eval()
    return model
