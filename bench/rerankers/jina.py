"""jina-v3.5: jinaai/jina-reranker-v3.5, listwise, through the vendor's own ``model.rerank``.

Plan section "Rerankers": "`model.rerank` (listwise), loaded from the pinned snapshot"; jina receives
the candidates in first-stage order and, being listwise, is run separately per depth by the quality
phase (``meta.listwise``). Model card: ``AutoModel.from_pretrained(..., dtype="auto",
trust_remote_code=True)`` and ``model.rerank(query, documents)`` returning one dict per document with
its input ``index`` and ``relevance_score``. The vendor code fixes the limits (query 1024, document
8192 tokens) and its own chunking of long lists; we record token counts of query and documents as the
model's tokenizer sees them and count documents (and the query) over those limits as truncated.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.errors import BenchError
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

    def _lengths(self, texts: Sequence[str]) -> list[int]:
        if self.tokenizer is None:
            return [0] * len(texts)
        return [len(x) for x in self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]]

    def score(self, query: str, passages: Sequence[str]) -> ScoreResult:
        import torch

        docs = list(passages)  # first-stage order, as the plan requires
        if not docs:
            return self.log.add(make_result([], max_input_tokens=0, truncated_pairs=0, chunk_size=0))
        with torch.inference_mode():
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
        q_len = self._lengths([query])[0]
        d_lens = self._lengths(docs)
        cut = sum(n > DOCUMENT_LIMIT for n in d_lens) + (len(docs) if q_len > QUERY_LIMIT else 0)
        longest = max(min(n, DOCUMENT_LIMIT) for n in d_lens) if d_lens else 0
        return self.log.add(
            make_result(
                scores,
                max_input_tokens=longest,
                truncated_pairs=min(cut, len(docs)),
                chunk_size=len(docs),
                input_tokens=sum(min(n, DOCUMENT_LIMIT) for n in d_lens) + min(q_len, QUERY_LIMIT),
            )
        )


def load_jina(path: Path, *, device: str, dtype: str) -> tuple[Any, Any | None]:
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(
        str(path), dtype=torch_dtype(dtype), trust_remote_code=True, local_files_only=True
    )
    model.to(device)
    model.eval()
    if not hasattr(model, "rerank"):
        raise BenchError(f"jina-v3.5: the model loaded from {path} has no `rerank` method (wrong snapshot?)")
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    return model, tokenizer
