"""jina-v3.5: jinaai/jina-reranker-v3.5, listwise, through the vendor's own ``model.rerank``.

Plan section "Rerankers": "`model.rerank` (listwise), loaded from the pinned snapshot"; jina receives
the candidates in first-stage order and, being listwise, is run separately per depth by the quality
phase (``meta.listwise``). Model card: ``AutoModel.from_pretrained(..., dtype="auto",
trust_remote_code=True)`` and ``model.rerank(query, documents)`` returning one dict per document with
its input ``index`` and ``relevance_score``. The vendor code fixes the limits (query 1024, document
8192 tokens) and its own chunking of long lists. ``max_input_tokens`` is the longest sequence the model
itself received (query, documents, prompt and special tokens, seen by a hook on the input embeddings), not
a document's length; documents (and the query) over the vendor's limits count as truncated pairs. Both
counts are made after the timed call (``score_timed``): inside it they were a second tokenisation of the
query and all k documents and a GPU-to-CPU synchronisation per forward pass, timed as jina's latency.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bench.core.errors import BenchError
from bench.rerankers.base import torch_dtype
from bench.rerankers.protocol import RecordLog, RerankerMeta, ScoreResult, make_result

QUERY_LIMIT = 1024
DOCUMENT_LIMIT = 8192


class JinaListwise:
    def __init__(self, meta: RerankerMeta, model: Any, tokenizer: Any | None) -> None:
        self._meta = meta
        self.model = model
        self.tokenizer = tokenizer
        self.log = RecordLog()

    @property
    def meta(self) -> RerankerMeta:
        return self._meta

    def _lengths(self, texts: Sequence[str]) -> list[int] | None:
        if self.tokenizer is None:
            return None
        return [len(x) for x in self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]]

    def score(self, query: str, passages: Sequence[str]) -> ScoreResult:
        return self.score_timed(query, passages)()

    def score_timed(self, query: str, passages: Sequence[str]) -> Callable[[], ScoreResult]:
        """``model.rerank`` and its scores (the timed unit); returns the bookkeeping (token counts from the
        model inputs seen, the vendor-limit counts by the tokenizer) to run after the clock has stopped."""
        # lazy: torch is heavy and is needed only here
        import torch

        docs = list(passages)  # first-stage order, as the plan requires
        if not docs:
            empty = make_result([], max_input_tokens=0, truncated_pairs=0, chunk_size=0)
            return lambda: self.log.add(empty)
        with torch.inference_mode(), observe_inputs(self.model) as seen:
            results = self.model.rerank(query, docs)
        scores = np.full(len(docs), np.nan, dtype=np.float64)
        for item in results:
            index = int(item["index"])
            if not 0 <= index < len(docs) or not np.isnan(scores[index]):
                raise BenchError(f"jina-v3.5: model.rerank returned a bad or repeated index {index}")
            scores[index] = float(item["relevance_score"])
        if np.isnan(scores).any():
            raise BenchError(
                f"jina-v3.5: model.rerank returned {len(results)} results for {len(docs)} documents"
            )
        return lambda: self.log.add(self._record(scores, query, docs, seen))

    def _record(self, scores: np.ndarray, query: str, docs: list[str], seen: _Seen) -> ScoreResult:
        lengths = seen.lengths()
        q_lens, d_lens = self._lengths([query]), self._lengths(docs)
        reasons = []
        if seen.reason is not None:
            reasons.append(seen.reason)
        elif not lengths:
            reasons.append("model.rerank ran no forward pass through the input embeddings that was seen")
        if q_lens is None or d_lens is None:
            reasons.append("no tokenizer to count which query or documents exceed the vendor's limits")
        if reasons:
            unmeasured = make_result(
                scores,
                max_input_tokens=None,
                truncated_pairs=None,
                chunk_size=len(docs),
                tokens_unmeasured="; ".join(reasons),
            )
            return unmeasured
        assert q_lens is not None and d_lens is not None  # for mypy: reasons is empty
        cut = sum(n > DOCUMENT_LIMIT for n in d_lens) + (len(docs) if q_lens[0] > QUERY_LIMIT else 0)
        return make_result(
            scores,
            max_input_tokens=max(lengths),
            truncated_pairs=min(cut, len(docs)),
            chunk_size=len(docs),
            input_tokens=sum(lengths),
        )


class _Seen:
    """The token-id tensors the model's input embeddings received, kept as they are (reading them on the
    host would synchronise the GPU inside the timed call); ``lengths`` counts them afterwards."""

    def __init__(self, pad: int | None = None) -> None:
        self.inputs: list[Any] = []
        self.pad = pad
        self.reason: str | None = None

    def lengths(self) -> list[int]:
        out: list[int] = []
        for ids in self.inputs:
            if ids.shape[0] == 1 or self.pad is None:
                out.extend([int(ids.shape[1])] * int(ids.shape[0]))
            else:
                out.extend(int(n) for n in (ids != self.pad).sum(dim=1).tolist())
        return out


@contextmanager
def observe_inputs(model: Any) -> Iterator[_Seen]:
    """Token counts of the real model input: a forward pre-hook on the input embeddings keeps, for every
    batch the vendor's ``rerank`` feeds the model (query, documents, its prompt and special tokens
    together), the token ids; ``_Seen.lengths`` counts the tokens that are not padding, after the call."""
    seen = _Seen()
    getter = getattr(model, "get_input_embeddings", None)
    try:
        embeddings = getter() if callable(getter) else None
    except (NotImplementedError, AttributeError):  # transformers raises for models that do not declare them
        embeddings = None
    if embeddings is None or not hasattr(embeddings, "register_forward_pre_hook"):
        seen.reason = "the model exposes no input embeddings to observe its input"
        yield seen
        return
    seen.pad = getattr(getattr(model, "config", None), "pad_token_id", None)

    def hook(module: Any, args: tuple[Any, ...]) -> None:
        ids = args[0] if args else None
        if ids is None or getattr(ids, "ndim", 0) != 2:
            seen.reason = "the input embeddings were called without a 2-d tensor of token ids"
            return
        seen.inputs.append(ids.detach())

    handle = embeddings.register_forward_pre_hook(hook)
    try:
        yield seen
    finally:
        handle.remove()


def load_jina(path: Path, *, device: str, dtype: str) -> tuple[Any, Any | None]:
    # lazy: transformers is heavy; only when a model is built
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(
        str(path), dtype=torch_dtype(dtype), trust_remote_code=True, local_files_only=True
    )
    model.to(device)
    model.eval()
    if not hasattr(model, "rerank"):
        raise BenchError(f"jina-v3.5: the model loaded from {path} has no `rerank` method (wrong snapshot?)")
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None:  # the snapshot's config names remote code: without trust_remote_code, transformers
        # asks "Do you wish to run the custom code? [y/N]" on the terminal (found by tests/runbook)
        tokenizer = AutoTokenizer.from_pretrained(str(path), trust_remote_code=True, local_files_only=True)
    return model, tokenizer
