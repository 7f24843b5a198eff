"""Tiny random models built offline, saved in the hub cache layout under a session temp folder.

``models--ORG--NAME/snapshots/<pinned revision>/`` exactly as ``bench models fetch`` would leave them,
so the tests exercise the real loading path (registry -> snapshot check -> CrossEncoder) without the hub.
The encoder is a 2-layer BERT sequence classifier; the decoder a 2-layer Qwen3ForCausalLM whose
word-level tokenizer holds the chat-template special tokens and the "yes"/"no"/"1"/"0" score tokens.
"""

from __future__ import annotations

from pathlib import Path

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
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    torch.manual_seed(0)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *[w.lower() for w in _vocab()], ":", ".", "?"]
    vocab = list(dict.fromkeys(vocab))
    tok = BertTokenizer(vocab={t: i for i, t in enumerate(vocab)}, model_max_length=64)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=1,
    )
    model = BertForSequenceClassification(config).eval()
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "[CLS]"]


def build_word_tokenizer(model_max_length: int = 4096):  # type: ignore[no-untyped-def]
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
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(1)
    tok = build_word_tokenizer()
    config = Qwen3Config(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=512,
        tie_word_embeddings=False,
        pad_token_id=tok.pad_token_id,
    )
    model = Qwen3ForCausalLM(config).eval()
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def qwen_dir(models_root: Path, model_id: str = "qwen3-0.6b") -> Path:
    plan = RERANKERS[model_id]
    assert plan.revision is not None
    return snapshot_path(plan.model, plan.revision, models_root)


PASSAGES = [
    "Berlin ist die Hauptstadt von Deutschland",
    "Hamburg liegt im Norden",
    "München Bayern",
    "Die Katze und der Hund im Garten",
    "Der Rhein ist ein Fluss " * 3,
    "Zug",
]
QUERY = "Was ist die Hauptstadt von Deutschland?"
