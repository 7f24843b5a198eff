"""Qwen3-Reranker model-card usage in plain transformers (Qwen/Qwen3-Reranker-0.6B and -4B).

The card: tokenizer with left padding; each pair becomes ``<Instruct>: {instruction}\\n<Query>: {query}\\n
<Document>: {doc}``, tokenised without padding and truncated to ``max_length - len(prefix) - len(suffix)``
(so only the pair text is cut, never the chat template), wrapped in the system/user prefix and the
assistant suffix (with an empty think block), padded, and scored by the last position's logits of the
tokens "yes" and "no": ``softmax([no, yes])[yes]``. Card default ``max_length`` 8192. The softmax is taken in
float64 here (order unchanged; avoids artificial ties of probabilities near 1). Written from the card.

Memory: the card reads ``model(**batch).logits[:, -1, :]``; here the model is asked for that position only
(``logits_to_keep=1``, transformers' own argument for causal LMs, the adapter's too), so the logits take
batch x vocabulary (100 x 151,669 x 2 bytes, 30 MB) instead of batch x width x vocabulary (about 18 GB at the
bundled passages' ~600 tokens). The last position's logits are the same numbers either way: the LM head is
applied per position.
"""

from __future__ import annotations

from typing import Any

from common import dtype_kwarg, torch_dtype

SYSTEM = (
    "Judge whether the Document meets the requirements based on the Query and the Instruct provided. "
    'Note that the answer can only be "yes" or "no".'
)
PREFIX = f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n"
SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"


def score_queries(
    model_dir: str, queries: list[dict[str, Any]], *, device: str, dtype: str | None, options: dict[str, Any]
) -> dict[str, list[float]]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(model_dir, **dtype_kwarg(torch_dtype(dtype)))
    model.to(device).eval()
    instruction = options["instruction"]
    max_length = int(options.get("max_length", 8192))
    batch_size = int(options.get("batch_size", 100))
    prefix_ids = tokenizer.encode(PREFIX, add_special_tokens=False)
    suffix_ids = tokenizer.encode(SUFFIX, add_special_tokens=False)
    yes_id = tokenizer.convert_tokens_to_ids("yes")
    no_id = tokenizer.convert_tokens_to_ids("no")
    out: dict[str, list[float]] = {}
    with torch.inference_mode():
        for q in queries:
            texts = [
                f"<Instruct>: {instruction}\n<Query>: {q['query']}\n<Document>: {p}" for p in q["passages"]
            ]
            scores: list[float] = []
            for start in range(0, len(texts), batch_size):
                enc = tokenizer(
                    texts[start : start + batch_size],
                    padding=False,
                    truncation="longest_first",
                    return_attention_mask=False,
                    max_length=max_length - len(prefix_ids) - len(suffix_ids),
                )
                enc["input_ids"] = [prefix_ids + ids + suffix_ids for ids in enc["input_ids"]]
                batch = tokenizer.pad(enc, padding=True, return_tensors="pt", max_length=max_length)
                batch = {k: v.to(device) for k, v in batch.items()}
                last = model(**batch, logits_to_keep=1).logits[:, -1, :]
                pair = torch.stack([last[:, no_id], last[:, yes_id]], dim=1).double()
                scores += [float(x) for x in torch.log_softmax(pair, dim=1)[:, 1].exp().cpu().tolist()]
            out[q["qid"]] = scores
    return out
