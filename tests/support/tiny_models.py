"""Tiny random models in the hub snapshot layout at the plan's pinned revisions, as ``bench models fetch``
leaves them (``data/models/models--ORG--NAME/snapshots/<revision>/``), loaded by the real loading code.

Families: the BERT cross-encoder (bge-v2-m3, and the int8 source it is), Qwen3 causal LMs (qwen3-0.6b,
qwen3-4b), the Qwen-based mxbai, gte's remote code (fake ``new-impl``, tests/rerankers), jina's remote code
(a fake ``rerank``, tests/equality), Querit's remote code (a fake with its interface), and the Arctic
embedder as a sentence-transformers folder with 1024 dimensions.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

from bench.plan import RERANKERS
from bench.rerankers.snapshots import snapshot_path
from bench.rerankers.testing import WORDS, build_bert, build_qwen3, build_word_tokenizer

VOYAGE_TOKENIZER_REVISION = "0" * 40  # a stand-in folder name; the hub would give the commit


def _snap(model_id: str, root: Path) -> Path:
    plan = RERANKERS[model_id]
    assert plan.revision is not None
    return snapshot_path(plan.model, plan.revision, root)


def write_jina(path: Path) -> Path:
    import torch
    from transformers import BertTokenizer

    from tests.equality.test_jina_reference import MODELING

    path.mkdir(parents=True, exist_ok=True)
    (path / "modeling.py").write_text(MODELING)
    spec = importlib.util.spec_from_file_location("fake_jina_modeling_for_runbook", path / "modeling.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    torch.manual_seed(4)
    module.FakeJina(module.FakeJinaConfig()).save_pretrained(path)
    cfg = json.loads((path / "config.json").read_text())
    cfg["auto_map"] = {"AutoConfig": "modeling.FakeJinaConfig", "AutoModel": "modeling.FakeJina"}
    (path / "config.json").write_text(json.dumps(cfg))
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "fluss", "stadt", "berlin"]
    BertTokenizer(vocab={w: i for i, w in enumerate(words)}).save_pretrained(path)
    return path


def portable_tokenizer_class(path: Path) -> Path:
    """transformers 5 writes ``"tokenizer_class": "TokenizersBackend"``, which the references' transformers
    4.57 cannot load; hub snapshots name a real class, so the tiny snapshot names the generic fast tokenizer
    that both versions know (as tests/equality does)."""
    cfg_path = path / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg_path.write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    return path


def word_level_tokenizer(words: list[str], model_max_length: int = 4096) -> Any:
    """A word-level fast tokenizer built from a tokenizer object, which transformers 4.57 (the references'
    environments) loads from tokenizer.json alone (as tests/equality's tiny models)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="<unk>",
        pad_token="<|endoftext|>",
        model_max_length=model_max_length,
    )


def _words(text: str) -> list[str]:
    return sorted(set(re.findall(r"\w+|[^\w\s]+", text.lower() + " " + text)) | set(WORDS) | {"?", "1", "0"})


def write_mxbai(path: Path) -> Path:
    """A Qwen2 causal LM (mxbai-rerank-v2 is Qwen2-based) whose tokenizer knows the vendor's prompt words
    (as tests/equality's tiny mxbai, which the vendor package loads under its own transformers)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from bench.rerankers.decoder import MXBAI_PREFIX, MXBAI_SUFFIX, MXBAI_TASK

    torch.manual_seed(1)
    tok = word_level_tokenizer(
        ["<unk>", "<|endoftext|>", *_words(MXBAI_PREFIX + MXBAI_SUFFIX + MXBAI_TASK + " query: document:")]
    )
    path.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(path)
    portable_tokenizer_class(path)
    cfg: dict[str, Any] = {
        "vocab_size": len(tok),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 512,
        "initializer_range": 0.5,
        "tie_word_embeddings": False,
        "pad_token_id": tok.pad_token_id,
    }
    Qwen2ForCausalLM(Qwen2Config(**cfg)).eval().save_pretrained(path)
    return path


def write_models(root: Path) -> Path:
    build_bert(_snap("bge-v2-m3", root))
    for m in ("qwen3-0.6b", "qwen3-4b"):
        build_qwen3(_snap(m, root))
    write_mxbai(_snap("mxbai-large-v2", root))
    gte = RERANKERS["gte-base"]
    assert gte.code_repo is not None and gte.code_revision is not None
    from tests.rerankers.rerankers_fake_gte import build_fake_gte

    build_fake_gte(_snap("gte-base", root), snapshot_path(gte.code_repo, gte.code_revision, root))
    write_jina(_snap("jina-v3.5", root))
    write_querit(_snap("querit-4b", root))
    write_arctic(root)
    return root


def write_voyage_tokenizer(root: Path) -> Path:
    tok = build_word_tokenizer()
    path = snapshot_path("voyageai/rerank-3", VOYAGE_TOKENIZER_REVISION, root)
    path.mkdir(parents=True, exist_ok=True)
    tok.backend_tokenizer.save(str(path / "tokenizer.json"))
    return path


QUERIT_MODELING = """
import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel


class FakeQueritConfig(PretrainedConfig):
    model_type = "fake_querit"

    def __init__(self, vocab_size=256, hidden_size=8, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size


class FakeQuerit(PreTrainedModel):
    config_class = FakeQueritConfig

    def __init__(self, config):
        super().__init__(config)
        self.emb = nn.Embedding(config.vocab_size, config.hidden_size)
        self.head = nn.Linear(config.hidden_size, 1)
        self.post_init()

    def _init_weights(self, module):
        pass

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        seen = attention_mask[:, 0, -1, :].to(self.emb.weight.dtype)  # what the final [CLS] attends to
        h = (self.emb(input_ids) * seen.unsqueeze(-1)).sum(1) / seen.sum(1, keepdim=True)
        return {"score": self.head(h)}
"""


def write_querit(path: Path) -> Path:
    """A remote-code model with the Querit interface (auto_map.AutoModel, a 4-D attention mask, a ``score``
    output) and a word-level tokenizer with [CLS], short maximum length so that inputs stay small."""
    import torch

    path.mkdir(parents=True, exist_ok=True)
    (path / "modeling_querit.py").write_text(QUERIT_MODELING)
    spec = importlib.util.spec_from_file_location(
        "fake_querit_modeling_for_runbook", path / "modeling_querit.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    from bench.rerankers.querit import TEMPLATE

    tok = word_level_tokenizer(["<unk>", "<|endoftext|>", "[CLS]", *_words(TEMPLATE)], model_max_length=64)
    torch.manual_seed(5)
    module.FakeQuerit(module.FakeQueritConfig(vocab_size=len(tok))).save_pretrained(path)
    cfg = json.loads((path / "config.json").read_text())
    cfg["auto_map"] = {
        "AutoConfig": "modeling_querit.FakeQueritConfig",
        "AutoModel": "modeling_querit.FakeQuerit",
    }
    (path / "config.json").write_text(json.dumps(cfg))
    tok.save_pretrained(path)
    return portable_tokenizer_class(path)


def write_arctic(root: Path) -> Path:
    """A sentence-transformers folder (tiny BERT, CLS pooling, a dense layer to the plan's 1024 dimensions,
    normalisation) at the Arctic embedder's pinned revision."""
    import torch
    from sentence_transformers import SentenceTransformer, models

    from bench.plan import EMBEDDING_DIMS, EMBEDDING_MODEL

    path = snapshot_path(EMBEDDING_MODEL.repo, EMBEDDING_MODEL.revision, root)
    bert = build_bert(path.parent / ".arctic-bert")
    torch.manual_seed(6)
    word = models.Transformer(str(bert))
    st = SentenceTransformer(
        modules=[
            word,
            models.Pooling(word.get_word_embedding_dimension(), "cls"),
            models.Dense(word.get_word_embedding_dimension(), EMBEDDING_DIMS),
            models.Normalize(),
        ]
    )
    st.save(str(path))
    import shutil

    shutil.rmtree(bert)
    return path
