"""The Qwen3 reference (``references/card_qwen3.py``) and the Qwen3 adapter build logits for
the last position only, so their largest tensor is bounded by batch x vocabulary, not batch x width x
vocabulary.

A tiny Qwen3 (hidden size 8, one layer) with the real Qwen3 vocabulary size (151,669) runs on the CPU; a
global forward hook records the size of every module output whose last dimension is the vocabulary (the LM
head's logits). With the card's ``model(**batch).logits[:, -1, :]`` the logits held batch x width x
vocabulary floats (about 30 MB per token of width at k = 100 in fp16; 18 GB at the bundled passages' ~600
tokens): the Qwen3 models were "not rated" on a 16 GB card. The scores are the card's either way (checked
against the full-logits forward, still reachable by ignoring ``logits_to_keep``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.core.plan import QWEN3_INSTRUCTION
from tests.conftest import REPO_ROOT
from tests.support.tiny_models import build_word_tokenizer, tiny_snapshot

pytestmark = pytest.mark.model

QWEN3_VOCAB = 151_669  # Qwen/Qwen3-Reranker-0.6B and -4B config.json "vocab_size"
BATCH = 6


@pytest.fixture(scope="module")
def real_vocab_qwen3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    tok = build_word_tokenizer()
    fields: dict[str, Any] = {
        "vocab_size": QWEN3_VOCAB,
        "hidden_size": 8,
        "intermediate_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 1,
        "num_key_value_heads": 1,
        "head_dim": 8,
        "max_position_embeddings": 512,
        "tie_word_embeddings": False,
        "pad_token_id": tok.pad_token_id,
        "initializer_range": 0.5,
    }
    path = tiny_snapshot("qwen3-0.6b", tmp_path_factory.mktemp("qwen3-real-vocab"))
    path.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(path)
    Qwen3ForCausalLM(Qwen3Config(**fields)).eval().save_pretrained(path)
    return path


@pytest.fixture
def vocab_outputs() -> Iterator[list[tuple[int, ...]]]:
    """Shapes of every module output whose last dimension is the Qwen3 vocabulary, while the test runs."""
    import torch

    seen: list[tuple[int, ...]] = []

    def hook(module: Any, args: Any, out: Any) -> None:
        if isinstance(out, torch.Tensor) and out.ndim >= 2 and out.shape[-1] == QWEN3_VOCAB:
            seen.append(tuple(out.shape))

    handle = torch.nn.modules.module.register_module_forward_hook(hook)
    try:
        yield seen
    finally:
        handle.remove()


def _queries() -> list[dict[str, Any]]:
    words = "berlin liegt an der spree und ist die hauptstadt von deutschland".split()
    passages = [" ".join(words[: 3 + 2 * i]) for i in range(BATCH)]  # widths differ: left padding matters
    return [{"qid": "q1", "query": "wo liegt berlin?", "passages": passages}]


def _card() -> Any:
    sys.path.insert(0, str(REPO_ROOT / "references"))
    try:
        import card_qwen3

        return card_qwen3
    finally:
        sys.path.remove(str(REPO_ROOT / "references"))


def _score(model_dir: Path) -> list[float]:
    options = {"instruction": QWEN3_INSTRUCTION, "max_length": 8192, "batch_size": BATCH}
    out = _card().score_queries(str(model_dir), _queries(), device="cpu", dtype="float32", options=options)
    return list(out["q1"])


def test_reference_logits_are_bounded_by_the_batch_not_the_width(
    real_vocab_qwen3: Path, vocab_outputs: list[tuple[int, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    import math

    from transformers import Qwen3ForCausalLM

    scores = _score(real_vocab_qwen3)
    assert vocab_outputs, "the LM head ran"
    largest = max(math.prod(s) for s in vocab_outputs)
    assert largest <= BATCH * QWEN3_VOCAB, vocab_outputs  # batch x vocabulary, whatever the width

    # The card's full-logits forward (transformers ignores logits_to_keep here): the same scores, and logits
    # that grow with the width: the bound above is what logits_to_keep bought.
    vocab_outputs.clear()
    forward = Qwen3ForCausalLM.forward

    def all_positions(self: Any, *args: Any, **kw: Any) -> Any:
        kw.pop("logits_to_keep", None)
        return forward(self, *args, **kw)

    monkeypatch.setattr(Qwen3ForCausalLM, "forward", all_positions)
    full = _score(real_vocab_qwen3)
    width = vocab_outputs[0][1]
    assert width > 20 and max(math.prod(s) for s in vocab_outputs) == BATCH * width * QWEN3_VOCAB
    assert full == pytest.approx(scores, rel=1e-5, abs=1e-6)


def test_adapter_logits_are_bounded_by_the_batch(
    real_vocab_qwen3: Path, vocab_outputs: list[tuple[int, ...]]
) -> None:
    import math

    from bench.rerankers.registry import load_reranker

    adapter = load_reranker("qwen3-0.6b", snapshot_dir=real_vocab_qwen3, device="cpu")
    query = _queries()[0]
    adapter.score(query["query"], query["passages"])
    assert vocab_outputs and max(math.prod(s) for s in vocab_outputs) <= BATCH * QWEN3_VOCAB, vocab_outputs
