"""A tiny stand-in for gte's remote code (Alibaba-NLP/new-impl), written for these tests.

It mimics only what the adapter relies on: ``model_type "new"``, ``model.new.embeddings`` with a
``position_ids`` buffer and ``_init_rope(config)`` that builds ``rotary_emb`` with non-persistent
``inv_freq``/``cos_cached``/``sin_cached`` buffers used in the forward pass, and classes referenced
from the weights' config.json as ``Alibaba-NLP/new-impl--module.Class`` (resolved at ``code_revision``).
"""

from __future__ import annotations

import json
from pathlib import Path

CONFIGURATION = """
from transformers import PretrainedConfig


class NewConfig(PretrainedConfig):
    model_type = "new"

    def __init__(self, vocab_size=64, hidden_size=16, max_position_embeddings=64, rope_theta=10000.0,
                 num_labels=1, **kwargs):
        super().__init__(num_labels=num_labels, **kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.rope_theta = rope_theta
"""

MODELING = """
import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import SequenceClassifierOutput

from .configuration import NewConfig


class NewRotaryEmbedding(nn.Module):
    def __init__(self, dim, max_position_embeddings, base):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        t = torch.arange(max_position_embeddings, dtype=torch.float32)
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos().to(torch.get_default_dtype()), persistent=False)
        self.register_buffer("sin_cached", emb.sin().to(torch.get_default_dtype()), persistent=False)


class NewEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings), persistent=False)
        self._init_rope(config)

    def _init_rope(self, config):
        self.rotary_emb = NewRotaryEmbedding(
            config.hidden_size, config.max_position_embeddings, config.rope_theta
        )

    def forward(self, input_ids):
        n = input_ids.shape[1]
        pos = self.position_ids[:n]
        if not torch.equal(pos, torch.arange(n, device=pos.device)):
            # A loader that leaves the non-persistent buffer uninitialised fails here every time, instead of
            # indexing with whatever the memory held (which may even happen to be in range).
            raise RuntimeError("uninitialised non-persistent buffer: position_ids is not arange(n)")
        x = self.word_embeddings(input_ids)
        return x * self.rotary_emb.cos_cached[pos] + x * self.rotary_emb.sin_cached[pos]


class NewModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = NewEmbeddings(config)


class NewForSequenceClassification(PreTrainedModel):
    config_class = NewConfig
    base_model_prefix = "new"

    def __init__(self, config):
        super().__init__(config)
        self.new = NewModel(config)
        self.classifier = nn.Linear(config.hidden_size, 1)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, return_dict=True, **kwargs):
        h = self.new.embeddings(input_ids)
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1)
        return SequenceClassifierOutput(logits=self.classifier(pooled))
"""


def build_fake_gte(weights: Path, code: Path) -> None:
    """Write remote code at ``code`` and a tiny checkpoint at ``weights`` (both snapshot folders)."""
    import importlib.util
    import sys

    import torch
    from transformers import BertTokenizer

    code.mkdir(parents=True, exist_ok=True)
    (code / "configuration.py").write_text(CONFIGURATION)
    (code / "modeling.py").write_text(MODELING)
    # import the code once, outside transformers, to create the checkpoint
    pkg = "fake_new_impl_for_tests"
    for name in ("configuration", "modeling"):
        spec = importlib.util.spec_from_file_location(f"{pkg}.{name}", code / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[f"{pkg}.{name}"] = module
        if name == "modeling":
            module.__package__ = pkg
        spec.loader.exec_module(module)
    sys.modules.setdefault(pkg, type(sys)(pkg))
    torch.manual_seed(2)
    config_cls = sys.modules[f"{pkg}.configuration"].NewConfig
    model = sys.modules[f"{pkg}.modeling"].NewForSequenceClassification(config_cls())
    weights.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(weights)
    cfg = json.loads((weights / "config.json").read_text())
    cfg["auto_map"] = {
        "AutoConfig": "Alibaba-NLP/new-impl--configuration.NewConfig",
        "AutoModelForSequenceClassification": "Alibaba-NLP/new-impl--modeling.NewForSequenceClassification",
    }
    cfg["architectures"] = ["NewForSequenceClassification"]
    (weights / "config.json").write_text(json.dumps(cfg))
    words = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "berlin",
        "hamburg",
        "zug",
        "ist",
        "die",
        "hauptstadt",
    ]
    BertTokenizer(vocab={w: i for i, w in enumerate(words)}, model_max_length=64).save_pretrained(weights)
