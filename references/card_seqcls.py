"""Model-card usage of a sequence-classification cross-encoder (bge-reranker-v2-m3, gte-multilingual-
reranker-base).

Both cards: tokenizer on [query, passage] pairs with padding, truncation and ``max_length=512``, then
``AutoModelForSequenceClassification(...)(**inputs).logits.view(-1).float()``; gte additionally loads with
``trust_remote_code=True`` (its card; the code revision is pinned by the plan, passed as ``code_revision``).
Written from the cards, not copied; one forward pass per query over all its passages, as the cards batch.
"""

from __future__ import annotations

from typing import Any

from common import as_floats, dtype_kwarg, torch_dtype


def score_queries(
    model_dir: str, queries: list[dict[str, Any]], *, device: str, dtype: str | None, options: dict[str, Any]
) -> dict[str, list[float]]:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    trust = bool(options.get("trust_remote_code", False))
    extra: dict[str, Any] = {}
    if options.get("code_revision"):
        extra["code_revision"] = options["code_revision"]
    if trust and options.get("cache_dir"):  # where "Org/repo--module.Class" remote code is cached (gte)
        extra["cache_dir"] = options["cache_dir"]
    tokenizer = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=trust)
    model = AutoModelForSequenceClassification.from_pretrained(
        model_dir, trust_remote_code=trust, **dtype_kwarg(torch_dtype(dtype)), **extra
    )
    model.to(device).eval()
    max_length = int(options.get("max_length", 512))
    out: dict[str, list[float]] = {}
    with torch.inference_mode():
        for q in queries:
            pairs = [[q["query"], p] for p in q["passages"]]
            inputs = tokenizer(
                pairs, padding=True, truncation=True, return_tensors="pt", max_length=max_length
            )
            inputs = {k: v.to(device) for k, v in inputs.items()}
            out[q["qid"]] = as_floats(model(**inputs, return_dict=True).logits.view(-1))
    return out
