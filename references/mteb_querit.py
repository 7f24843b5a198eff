"""Querit-4B with the input format of mteb 2.24.3 ``QueritWrapper`` (the model card has no usage code).

What that wrapper does, restated: load ``AutoModel`` and ``AutoTokenizer`` with ``trust_remote_code=True``
(mteb's loader uses bfloat16); ``max_length = min(4096, tokenizer.model_max_length) - 1``; each pair is
the text ``Judge whether the Content meets the requirements based on the Query. Query: {query};
Content: {doc}`` (no instruction for MIRACLReranking), tokenised without special tokens and truncated
to ``max_length``; a ``[CLS]`` token is appended; the sequence is LEFT-padded with the pad id (0 if
none) to exactly ``max_length``, or, if longer, only its last ``max_length`` tokens are kept; the
attention mask is a boolean ``[batch, 1, n, n]`` matrix: content tokens attend causally to content
tokens, the final [CLS] attends causally to every non-pad token, pads attend to nothing; the score is
``model(...)["score"].squeeze(-1)``. Written from mteb 2.24.3's source (PyPI wheel), not copied. Runs
under transformers 4.57 (references/tf457).
"""

from __future__ import annotations

from typing import Any

from common import as_floats, dtype_kwarg, torch_dtype

TEMPLATE = (
    "Judge whether the Content meets the requirements based on the Query. Query: {query}; Content: {doc}"
)
PAD, CONTENT, CLS = 0, 1, 2


def block_mask(kinds: list[int]) -> Any:
    import torch

    k = torch.tensor(kinds)
    n = k.shape[0]
    causal = torch.arange(n).view(1, n) <= torch.arange(n).view(n, 1)
    rows, cols = k.view(n, 1), k.view(1, n)
    content = (rows == CONTENT) & (cols == CONTENT)
    cls = (rows == CLS) & (cols != PAD)
    return ((content | cls) & causal).unsqueeze(0)


def encode(tokenizer: Any, texts: list[str], max_length: int, cls_id: int, pad_id: int) -> dict[str, Any]:
    import torch

    ids_batch, masks = [], []
    for ids in tokenizer(
        texts, add_special_tokens=False, truncation=True, max_length=max_length, padding=False
    )["input_ids"]:
        ids = [*ids, cls_id]
        kinds = [CONTENT] * (len(ids) - 1) + [CLS]
        if len(ids) < max_length:
            fill = max_length - len(ids)
            ids, kinds = [pad_id] * fill + ids, [PAD] * fill + kinds
        else:
            ids, kinds = ids[-max_length:], kinds[-max_length:]
        ids_batch.append(ids)
        masks.append(block_mask(kinds))
    return {
        "input_ids": torch.tensor(ids_batch, dtype=torch.long),
        "attention_mask": torch.stack(masks, dim=0),
    }


def score_queries(
    model_dir: str, queries: list[dict[str, Any]], *, device: str, dtype: str | None, options: dict[str, Any]
) -> dict[str, list[float]]:
    import torch
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(
        model_dir, trust_remote_code=True, **dtype_kwarg(torch_dtype(dtype or "bfloat16"))
    )
    model.to(device).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=True)
    if "[CLS]" not in tokenizer.get_vocab():
        raise RuntimeError("tokenizer has no [CLS] token; QueritWrapper refuses such a tokenizer")
    cls_id = tokenizer.convert_tokens_to_ids("[CLS]")
    pad_id = tokenizer.pad_token_id or 0
    max_length = min(int(options.get("max_length", 4096)), tokenizer.model_max_length) - 1
    batch_size = int(options.get("batch_size", 32))
    out: dict[str, list[float]] = {}
    with torch.inference_mode():
        for q in queries:
            texts = [TEMPLATE.format(query=q["query"], doc=p) for p in q["passages"]]
            scores: list[float] = []
            for start in range(0, len(texts), batch_size):
                enc = encode(tokenizer, texts[start : start + batch_size], max_length, cls_id, pad_id)
                result = model(**{k: v.to(device) for k, v in enc.items()})
                scores += as_floats(result["score"].squeeze(-1))
            out[q["qid"]] = scores
    return out
