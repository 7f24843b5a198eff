"""jina-reranker-v3.5 model-card usage (listwise): ``AutoModel.from_pretrained(..., trust_remote_code=True)``,
``model.eval()``, ``model.rerank(query, documents)``, which returns one dict per document with ``index`` and
``relevance_score``; scores are put back by ``index``. Runs under transformers 4.57 (references/tf457).
Documents are passed in first-stage order, all of a query in one call, as the plan fixes for jina.
"""

from __future__ import annotations

from typing import Any

from common import dtype_kwarg, torch_dtype


def score_queries(
    model_dir: str, queries: list[dict[str, Any]], *, device: str, dtype: str | None, options: dict[str, Any]
) -> dict[str, list[float]]:
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(model_dir, trust_remote_code=True, **dtype_kwarg(torch_dtype(dtype)))
    model.to(device).eval()
    out: dict[str, list[float]] = {}
    with torch.inference_mode():
        for q in queries:
            results = model.rerank(q["query"], list(q["passages"]))
            scores = [float("nan")] * len(q["passages"])
            for item in results:
                scores[int(item["index"])] = float(item["relevance_score"])
            if any(s != s for s in scores):
                raise RuntimeError(f"model.rerank returned no score for some documents of query {q['qid']}")
            out[q["qid"]] = scores
    return out
