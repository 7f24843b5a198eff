"""Tiny random reranker models in the hub snapshot layout, for tests and adapter-check demonstrations.

Not used by any measurement. ``tiny_models_root(root)`` writes
``models--ORG--NAME/snapshots/<pinned revision>/`` for bge-v2-m3 (a 2-layer BERT sequence classifier),
qwen3-0.6b and mxbai-large-v2 (a 2-layer Qwen3ForCausalLM with a word-level tokenizer holding the
chat-template special tokens and the "yes"/"no"/"1"/"0" score tokens), exactly where ``load_reranker``
looks, so the real loading and scoring paths run offline in seconds. Weights are random (fixed seeds):
scores mean nothing, but they differ between inputs, so formatting mistakes (the wrong variants of
``bench.rerankers.decoder``) change them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.plan import RERANKERS
from bench.rerankers.snapshots import snapshot_path

WORDS = (
    "judge whether the document meets requirements based on query and instruct provided note that answer can "
    "only be yes no system user assistant think given a web search retrieve relevant passages answer you are "
    "qwen created by alibaba cloud helpful search relevance expert who evaluates how well documents match "
    "queries for each pair carefully analyze semantic relationship between them then provide your binary "
    "judgment 0 1 for not relevant relevance content "
    "berlin ist die hauptstadt von deutschland hamburg liegt im norden münchen bayern fluss rhein elbe "
    "wie viele einwohner hat stadt wo was wer wann katze hund haus garten auto zug bahn see berg wald"
).split()


def _vocab() -> list[str]:
    seen: dict[str, None] = {}
    for w in WORDS:
        seen.setdefault(w, None)
        seen.setdefault(w.capitalize(), None)
    return list(seen)


def build_bert(path: Path) -> Path:
    # lazy: torch and transformers are heavy; only when a model is built
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    torch.manual_seed(0)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *[w.lower() for w in _vocab()], ":", ".", "?"]
    vocab = list(dict.fromkeys(vocab))
    tok = BertTokenizer(vocab={t: i for i, t in enumerate(vocab)}, model_max_length=64)
    fields: dict[str, Any] = {
        "vocab_size": len(vocab),
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 128,
        "num_labels": 1,
    }
    config = BertConfig(**fields)  # transformers 5 configs confuse mypy's keyword check
    model = BertForSequenceClassification(config).eval()
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "[CLS]"]


def build_word_tokenizer(model_max_length: int = 4096) -> Any:
    # lazy: tokenizers/transformers are heavy; only when a tiny test model is built
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = [
        "[UNK]",
        *SPECIALS,
        *_vocab(),
        "<",
        ">",
        ":",
        ">:",
        '"',
        '".',
        ".",
        "?",
        "|",
        "(",
        ")",
        ").",
        ";",
    ]
    vocab = list(dict.fromkeys(vocab))
    core = Tokenizer(models.WordLevel({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, unk_token="[UNK]", pad_token="<|endoftext|>", model_max_length=model_max_length
    )
    tok.add_special_tokens({"additional_special_tokens": SPECIALS[1:]})
    return tok


def build_qwen3(path: Path) -> Path:
    # lazy: torch and transformers are heavy; only when a model is built
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(1)
    tok = build_word_tokenizer()
    fields: dict[str, Any] = {
        "vocab_size": len(tok),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 16,
        "max_position_embeddings": 512,
        "tie_word_embeddings": False,
        "pad_token_id": tok.pad_token_id,
    }
    config = Qwen3Config(**fields)  # transformers 5 configs confuse mypy's keyword check
    model = Qwen3ForCausalLM(config).eval()
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


TINY_BUILDERS = {"bge-v2-m3": build_bert, "qwen3-0.6b": build_qwen3, "mxbai-large-v2": build_qwen3}


def tiny_snapshot(model_id: str, root: Path) -> Path:
    """Where the tiny snapshot of ``model_id`` lives (or will live) under ``root``."""
    plan = RERANKERS[model_id]
    if plan.revision is None:
        raise ValueError(f"{model_id} has no snapshot")
    return snapshot_path(plan.model, plan.revision, root)


def tiny_models_root(root: Path, model_ids: tuple[str, ...] = tuple(TINY_BUILDERS)) -> Path:
    """Build the tiny snapshots of ``model_ids`` under ``root`` (a models folder); returns ``root``."""
    for model_id in model_ids:
        TINY_BUILDERS[model_id](tiny_snapshot(model_id, root))
    return root
