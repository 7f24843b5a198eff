"""querit-4b: Querit/Querit-4B in the input format of mteb 2.24.3's ``QueritWrapper``.

Plan section "Rerankers": "input format of mteb 2.24.3 QueritWrapper, model class loaded explicitly";
max input "1024 (the model pads every input to the maximum)". Facts read from the mteb 2.24.3 wheel
(``mteb/models/model_implementations/querit_models.py``):

* text: ``"Judge whether the Content meets the requirements based on the Query. Query: {q}; Content: {d}"``
  (the wrapper's branch without an instruction; MIRACLReranking carries none);
* length ``L = min(4096, tokenizer.model_max_length) - 1``; the text is tokenised without special
  tokens, cut from the end to ``L``, ``[CLS]`` appended, then left-padded with ``pad_token_id or 0`` to
  exactly ``L`` (an input that reached ``L + 1`` keeps its last ``L`` tokens);
* attention mask ``[batch, 1, L, L]`` (bool): content tokens attend causally to content, ``[CLS]``
  causally to every non-pad token, pads to nothing;
* score ``model(**inputs)["score"].squeeze(-1)`` upcast to fp32; dtype bfloat16 (``fp_options``).

The model class is taken explicitly from the snapshot's ``auto_map["AutoModel"]`` (remote code in
the same pinned snapshot) instead of going through ``AutoModel``'s lookup.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError
from bench.rerankers.base import Chunk, ChunkedTorchReranker, to_device, torch_dtype
from bench.rerankers.protocol import RerankerMeta

TEMPLATE = (
    "Judge whether the Content meets the requirements based on the Query. Query: {query}; Content: {doc}"
)
WRAPPER_MAX = 4096  # QueritWrapper's default max_length keyword


def querit_length(tokenizer: Any) -> int:
    return min(WRAPPER_MAX, int(tokenizer.model_max_length)) - 1


def content_cls_mask(block_types: list[int]) -> Any:
    """[1, n, n] bool mask: 0 pad (sees nothing), 1 content (causal, content), 2 [CLS] (causal, all)."""
    # lazy: torch is heavy and is needed only here
    import torch

    kinds = torch.tensor(block_types, dtype=torch.long)
    n = kinds.shape[0]
    rows, cols = kinds.view(n, 1), kinds.view(1, n)
    causal = torch.arange(n).view(1, n) <= torch.arange(n).view(n, 1)
    content = (rows == 1) & (cols == 1) & causal
    cls = (rows == 2) & (cols != 0) & causal
    return (content | cls).unsqueeze(0)


class QueritReranker(ChunkedTorchReranker):
    def __init__(self, meta: RerankerMeta, model: Any, tokenizer: Any) -> None:
        super().__init__(meta)
        self.model = model
        self.tok = tokenizer
        if "[CLS]" not in tokenizer.get_vocab():
            raise BenchError("querit-4b: tokenizer lacks the special token [CLS] that the input format needs")
        self.cls_id = int(tokenizer.convert_tokens_to_ids("[CLS]"))
        self.pad_id = int(tokenizer.pad_token_id or 0)
        self.length = querit_length(tokenizer)

    def _chunk(self, query: str, passages: Sequence[str]) -> Chunk:
        # lazy: torch is heavy and is needed only here
        import torch

        texts = [TEMPLATE.format(query=query, doc=p) for p in passages]
        full = self.tok(texts, add_special_tokens=False)["input_ids"]
        ids_rows, masks, lengths, cut = [], [], [], []
        for ids_full in full:
            ids = [*ids_full[: self.length], self.cls_id]
            kinds = [1] * (len(ids) - 1) + [2]
            if len(ids) < self.length:
                pad = self.length - len(ids)
                ids, kinds = [self.pad_id] * pad + ids, [0] * pad + kinds
            else:
                ids, kinds = ids[-self.length :], kinds[-self.length :]
            ids_rows.append(ids)
            masks.append(content_cls_mask(kinds))
            lengths.append(sum(k != 0 for k in kinds))
            cut.append(len(ids_full) + 1 > self.length)
        features = {
            "input_ids": torch.tensor(ids_rows, dtype=torch.long),
            "attention_mask": torch.stack(masks),
        }
        return Chunk(to_device(features, self.meta.device), lengths, cut)

    def _forward(self, features: dict[str, Any]) -> Any:
        return self.model(**features)["score"].reshape(-1)


def load_querit(path: Path, *, device: str, dtype: str) -> tuple[Any, Any, str]:
    """Model (class from the snapshot's auto_map, loaded explicitly), tokenizer and the class reference."""
    # lazy: transformers is heavy; only when a model is built
    from transformers import AutoConfig, AutoTokenizer
    from transformers.dynamic_module_utils import get_class_from_dynamic_module

    config = AutoConfig.from_pretrained(str(path), trust_remote_code=True, local_files_only=True)
    class_ref = (getattr(config, "auto_map", None) or {}).get("AutoModel")
    if not class_ref:
        raise BenchError(
            f"querit-4b: {path}/config.json has no auto_map.AutoModel; cannot load the model class"
        )
    cls: Any = get_class_from_dynamic_module(class_ref, str(path), local_files_only=True)
    model = cls.from_pretrained(str(path), config=config, dtype=torch_dtype(dtype), local_files_only=True)
    model.to(device)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(str(path), trust_remote_code=True, local_files_only=True)
    return model, tokenizer, str(class_ref)
