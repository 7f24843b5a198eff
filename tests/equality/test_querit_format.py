"""The Querit reference (references/mteb_querit.py, written from mteb 2.24.3's QueritWrapper) and the
adapter (bench/rerankers/querit.py) build identical model inputs; no model weights needed."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from bench.core.paths import repo_root
from bench.rerankers.protocol import RerankerMeta


@pytest.fixture
def tokenizer() -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        *"judge whether the content meets requirements based on query . : ;".split(),
        *"wo liegt berlin stadt am fluss".split(),
    ]
    backend = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]")
    tok.add_special_tokens({"cls_token": "[CLS]"})
    tok.model_max_length = 33  # -> inputs of exactly 32 tokens, as the wrapper computes
    return tok


def test_reference_and_adapter_inputs_agree(tokenizer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from bench.rerankers.querit import QueritReranker, querit_length

    monkeypatch.syspath_prepend(str(repo_root() / "references"))
    ref = importlib.import_module("mteb_querit")
    meta = RerankerMeta("querit-4b", "Querit/Querit-4B", "x", "float32", "cpu", None, False)
    adapter = QueritReranker(meta, model=None, tokenizer=tokenizer)
    query = "wo liegt berlin"
    passages = ["stadt am fluss", "berlin " * 30]  # one padded, one cut
    length = min(4096, tokenizer.model_max_length) - 1
    assert querit_length(tokenizer) == length == 32
    texts = [ref.TEMPLATE.format(query=query, doc=p) for p in passages]
    cls_id = tokenizer.convert_tokens_to_ids("[CLS]")
    theirs = ref.encode(tokenizer, texts, length, cls_id, tokenizer.pad_token_id or 0)
    ours = adapter._chunk(query, passages).features
    assert torch.equal(ours["input_ids"].cpu(), theirs["input_ids"])
    assert torch.equal(ours["attention_mask"].cpu().bool(), theirs["attention_mask"].bool())
    assert theirs["input_ids"].shape == (2, 32)
    assert theirs["input_ids"][0, 0].item() == tokenizer.pad_token_id  # left padding
    assert theirs["input_ids"][1, -1].item() == cls_id  # [CLS] last, also when cut
