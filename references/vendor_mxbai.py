"""mxbai-rerank-large-v2 through the vendor package named on its model card (``mxbai-rerank==0.1.6``):
``MxbaiRerankV2(model_dir).rank(query, documents, top_k=len(documents), return_documents=False)``; results
carry ``index`` and ``score`` and are put back by ``index``. Runs in its own locked environment
(references/mxbai) so the vendor package and its extra dependencies stay out of the measuring environment.
"""

from __future__ import annotations

from typing import Any


def score_queries(
    model_dir: str, queries: list[dict[str, Any]], *, device: str, dtype: str | None, options: dict[str, Any]
) -> dict[str, list[float]]:
    from mxbai_rerank import MxbaiRerankV2

    kwargs: dict[str, Any] = {"device": device}
    if dtype:
        kwargs["torch_dtype"] = dtype
    model = MxbaiRerankV2(model_dir, **kwargs)
    out: dict[str, list[float]] = {}
    for q in queries:
        docs = list(q["passages"])
        results = model.rank(q["query"], docs, top_k=len(docs), return_documents=False, sort=False)
        scores = [float("nan")] * len(docs)
        for item in results:
            scores[int(item.index)] = float(item.score)
        if any(s != s for s in scores):
            raise RuntimeError(f"mxbai-rerank returned no score for some documents of query {q['qid']}")
        out[q["qid"]] = scores
    return out
