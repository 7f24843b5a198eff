"""Every tiny random model of the tests: one module, in the hub snapshot layout at the
plan's pinned revisions, as ``bench models fetch`` leaves them (``models--ORG--NAME/snapshots/<revision>/``),
loaded by the real loading code offline in seconds. Not used by any measurement.

The building blocks: ``word_level_tokenizer`` (the one word-level tokenizer helper), ``build_bert`` (the one
BERT builder: layers, sizes, vocabulary, with or without the sequence-classification head),
``build_sentence_transformer`` (a BERT wrapped as a sentence-transformers folder, for the embedder),
``build_qwen`` (the one Qwen3/Qwen2 causal-LM builder) and ``tiny_snapshot`` (the one hub-snapshot path
helper). Families built from them: the BERT cross-encoder (bge-v2-m3, and the int8 source it is), Qwen3
causal LMs (qwen3-0.6b, qwen3-4b), the Qwen2-based mxbai, Querit's remote code (a fake with its interface),
jina's remote code (a fake ``rerank``), gte's remote code (a fake ``new-impl``), the Arctic embedder (1024
dimensions). Weights are random with fixed seeds: scores mean nothing, but they differ between inputs, so
formatting mistakes (the wrong variants of ``bench.rerankers.decoder``) change them. Each builder keeps the
seed and configuration its tests' expected values were computed with.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from bench.core.plan import EMBEDDING_DIMS, EMBEDDING_MODEL, RERANKERS
from bench.rerankers.snapshots import snapshot_path

EMBEDDER = "arctic-embed"  # tiny_snapshot's name for the first stage's embedding model (not a reranker)

WORDS = (
    "judge whether the document meets requirements based on query and instruct provided note that answer can "
    "only be yes no system user assistant think given a web search retrieve relevant passages answer you are "
    "qwen created by alibaba cloud helpful search relevance expert who evaluates how well documents match "
    "queries for each pair carefully analyze semantic relationship between them then provide your binary "
    "judgment 0 1 for not relevant relevance content "
    "berlin ist die hauptstadt von deutschland hamburg liegt im norden münchen bayern fluss rhein elbe "
    "wie viele einwohner hat stadt wo was wer wann katze hund haus garten auto zug bahn see berg wald"
).split()
BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "[CLS]"]


def _vocab() -> list[str]:
    seen: dict[str, None] = {}
    for w in WORDS:
        seen.setdefault(w, None)
        seen.setdefault(w.capitalize(), None)
    return list(seen)


def tiny_snapshot(model_id: str, root: Path) -> Path:
    """Where the snapshot of ``model_id`` (a plan reranker id, or ``EMBEDDER``) lives under ``root`` (a models
    folder), at the plan's pinned revision: the path the adapters resolve."""
    if model_id == EMBEDDER:
        return snapshot_path(EMBEDDING_MODEL.repo, EMBEDDING_MODEL.revision, root)
    plan = RERANKERS[model_id]
    if plan.revision is None:
        raise ValueError(f"{model_id} has no snapshot")
    return snapshot_path(plan.model, plan.revision, root)


def word_level_tokenizer(
    words: Sequence[str],
    *,
    unk: str = "<unk>",
    model_max_length: int | None = None,
    specials: Sequence[str] = (),
) -> Any:
    """A word-level fast tokenizer over ``words`` (in order, duplicates dropped; ``unk`` the unknown token,
    pad ``<|endoftext|>``, whitespace pre-tokenizer) built from a tokenizer object, which transformers 4.57
    (the references' environments) loads from tokenizer.json alone; ``specials``: additional special
    tokens (kept whole)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token=unk))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    kw: dict[str, Any] = {} if model_max_length is None else {"model_max_length": model_max_length}
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token=unk, pad_token="<|endoftext|>", **kw)
    if specials:
        tok.add_special_tokens({"additional_special_tokens": list(specials)})
    return tok


def build_word_tokenizer(model_max_length: int = 4096) -> Any:
    """The reranker tests' tokenizer: the chat-template special tokens, the tiny vocabulary (``WORDS``, also
    capitalised), the "yes"/"no"/"1"/"0" score tokens and punctuation."""
    punctuation = ["<", ">", ":", ">:", '"', '".', ".", "?", "|", "(", ")", ").", ";"]
    return word_level_tokenizer(
        ["[UNK]", *SPECIALS, *_vocab(), *punctuation],
        unk="[UNK]",
        model_max_length=model_max_length,
        specials=SPECIALS[1:],
    )


def portable_tokenizer_class(path: Path) -> Path:
    """transformers 5 writes ``"tokenizer_class": "TokenizersBackend"``, which the references' transformers
    4.57 cannot load; hub snapshots name a real class, so the tiny snapshot names the generic fast tokenizer
    that both versions know."""
    cfg_path = path / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg_path.write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    return path


def build_bert(
    path: Path,
    *,
    words: Sequence[str] | None = None,
    tokenizer: Any = None,
    model_max_length: int | None = 64,
    seed: int | None = 0,
    layers: int = 2,
    hidden: int = 32,
    heads: int = 2,
    intermediate: int = 64,
    max_positions: int = 128,
    initializer_range: float | None = None,
    classifier: bool = True,
) -> Path:
    """A BERT at ``path`` with its tokenizer: a ``BertTokenizer`` over ``BERT_SPECIALS`` + ``words`` (default:
    the tiny vocabulary lower-cased and ":", ".", "?"), or ``tokenizer`` as given; with the one-logit
    sequence-classification head (a cross-encoder) or without (``classifier=False``, an encoder for a
    sentence-transformer). ``seed`` None: the caller's random state goes on (weights depend on what it built
    before)."""
    # lazy: torch and transformers are heavy; only when a model is built
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertModel, BertTokenizer

    if seed is not None:
        torch.manual_seed(seed)
    if tokenizer is None:
        rest = [*(w.lower() for w in _vocab()), ":", ".", "?"] if words is None else list(words)
        vocab = list(dict.fromkeys([*BERT_SPECIALS, *rest]))
        kw: dict[str, Any] = {} if model_max_length is None else {"model_max_length": model_max_length}
        tokenizer = BertTokenizer(vocab={t: i for i, t in enumerate(vocab)}, **kw)
    fields: dict[str, Any] = {
        "vocab_size": tokenizer.vocab_size,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": intermediate,
        "max_position_embeddings": max_positions,
    }
    if classifier:
        fields["num_labels"] = 1
    if initializer_range is not None:
        fields["initializer_range"] = initializer_range
    config = BertConfig(**fields)  # transformers 5 configs confuse mypy's keyword check
    model = (BertForSequenceClassification if classifier else BertModel)(config).eval()
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def build_sentence_transformer(
    path: Path,
    *,
    pooling: Literal["mean", "cls"],
    dense_dims: int | None = None,
    normalize: bool = False,
    seed: int | None = None,
    **bert: Any,
) -> Path:
    """A sentence-transformers folder at ``path``: a BERT (``build_bert(**bert)``, built beside ``path`` and
    removed), ``pooling``, a dense layer to ``dense_dims`` (its weights drawn after ``seed``) and a
    normalisation when asked."""
    # lazy: torch and sentence-transformers are heavy; only when a model is built
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling, Transformer

    encoder = build_bert(path.parent / f".{path.name}.encoder", **bert)
    if seed is not None:
        torch.manual_seed(seed)
    word = Transformer(str(encoder))
    dim = word.get_embedding_dimension()
    modules: list[Any] = [word, Pooling(dim, pooling_mode=pooling)]
    if dense_dims is not None:
        modules.append(Dense(dim, dense_dims))
    if normalize:
        modules.append(Normalize())
    SentenceTransformer(modules=modules, device="cpu").save(str(path))
    shutil.rmtree(encoder)
    return path


def build_qwen(
    path: Path,
    tokenizer: Any = None,
    *,
    family: Literal["qwen3", "qwen2"] = "qwen3",
    seed: int | None = 1,
    heads: int = 2,
    kv_heads: int = 1,
    head_dim: int | None = 16,
    max_positions: int = 512,
    initializer_range: float | None = None,
    portable: bool = False,
) -> Path:
    """A 2-layer Qwen3 (or Qwen2: mxbai-rerank-v2 is Qwen2-based) causal LM, hidden size 32, untied
    embeddings, at ``path`` with ``tokenizer`` (default ``build_word_tokenizer()``); ``portable``: the
    tokenizer config names a class transformers 4.57 knows (``portable_tokenizer_class``). ``seed`` None: the
    caller's random state goes on."""
    # lazy: torch and transformers are heavy; only when a model is built
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM

    if seed is not None:
        torch.manual_seed(seed)
    tok = build_word_tokenizer() if tokenizer is None else tokenizer
    fields: dict[str, Any] = {
        "vocab_size": len(tok),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "max_position_embeddings": max_positions,
        "tie_word_embeddings": False,
        "pad_token_id": tok.pad_token_id,
    }
    if head_dim is not None:
        fields["head_dim"] = head_dim
    if initializer_range is not None:
        fields["initializer_range"] = initializer_range
    if family == "qwen3":  # transformers 5 configs confuse mypy's keyword check: fields go in as a dict
        model: Any = Qwen3ForCausalLM(Qwen3Config(**fields))
    else:
        model = Qwen2ForCausalLM(Qwen2Config(**fields))
    path.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(path)
    if portable:
        portable_tokenizer_class(path)
    model.eval().save_pretrained(path)
    return path


TINY_BUILDERS = {"bge-v2-m3": build_bert, "qwen3-0.6b": build_qwen, "mxbai-large-v2": build_qwen}


def tiny_models_root(root: Path, model_ids: tuple[str, ...] = tuple(TINY_BUILDERS)) -> Path:
    """Build the tiny snapshots of ``model_ids`` (the reranker tests' three) under ``root``."""
    for model_id in model_ids:
        TINY_BUILDERS[model_id](tiny_snapshot(model_id, root))
    return root


VOYAGE_TOKENIZER_REVISION = "0" * 40  # a stand-in folder name; the hub would give the commit


JINA_MODELING = """
import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel


class FakeJinaConfig(PretrainedConfig):
    model_type = "fake_jina"

    def __init__(self, hidden_size=8, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size


class FakeJina(PreTrainedModel):
    config_class = FakeJinaConfig

    def __init__(self, config):
        super().__init__(config)
        self.emb = nn.Embedding(256, config.hidden_size)
        self.head = nn.Linear(config.hidden_size, 1)
        self.post_init()

    def _init_weights(self, module):
        pass

    @torch.no_grad()
    def rerank(self, query, documents, top_n=None, **kwargs):
        context = " ".join(documents)[:200]  # listwise: each score depends on the whole list
        scores = []
        for doc in documents:
            # min(ord(c), 255) of every character, from the code points in one call (a Python loop over
            # the characters was most of the fake's time: 4,080 documents in the runbook's quality step)
            text = (query + "|" + doc + "|" + context).encode("utf-32-le")
            ids = torch.frombuffer(bytearray(text), dtype=torch.int32).clamp(max=255).long()
            scores.append(float(self.head(self.emb(ids).mean(0))))
        order = sorted(range(len(documents)), key=lambda i: -scores[i])
        return [{"index": i, "relevance_score": scores[i], "document": documents[i]} for i in order]
"""


def write_jina(path: Path) -> Path:
    """jina's remote code: a fake whose ``rerank`` returns results sorted by score (as the card's)."""
    import torch
    from transformers import BertTokenizer

    path.mkdir(parents=True, exist_ok=True)
    (path / "modeling.py").write_text(JINA_MODELING)
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


def _words(text: str) -> list[str]:
    return sorted(set(re.findall(r"\w+|[^\w\s]+", text.lower() + " " + text)) | set(WORDS) | {"?", "1", "0"})


def write_mxbai(path: Path) -> Path:
    """A Qwen2 causal LM (mxbai-rerank-v2 is Qwen2-based) whose tokenizer knows the vendor's prompt words
    (as tests/equality's tiny mxbai, which the vendor package loads under its own transformers)."""
    from bench.rerankers.decoder import MXBAI_PREFIX, MXBAI_SUFFIX, MXBAI_TASK

    tok = word_level_tokenizer(
        ["<unk>", "<|endoftext|>", *_words(MXBAI_PREFIX + MXBAI_SUFFIX + MXBAI_TASK + " query: document:")],
        model_max_length=4096,
    )
    return build_qwen(
        path,
        tok,
        family="qwen2",
        seed=1,
        # two query heads sharing one key/value head (grouped-query attention, as in the real model)
        # of 16 dimensions: torch's CPU attention on 4 heads of 8 dimensions took three times as long for the
        # same sizes (tests/runbook scores ~100 batches of 100 prompts of ~100 tokens with it)
        heads=2,
        kv_heads=1,
        head_dim=None,
        initializer_range=0.5,
        portable=True,
    )


def write_models(root: Path) -> Path:
    build_bert(tiny_snapshot("bge-v2-m3", root))
    for m in ("qwen3-0.6b", "qwen3-4b"):
        build_qwen(tiny_snapshot(m, root))
    write_mxbai(tiny_snapshot("mxbai-large-v2", root))
    gte = RERANKERS["gte-base"]
    assert gte.code_repo is not None and gte.code_revision is not None
    build_fake_gte(tiny_snapshot("gte-base", root), snapshot_path(gte.code_repo, gte.code_revision, root))
    write_jina(tiny_snapshot("jina-v3.5", root))
    write_querit(tiny_snapshot("querit-4b", root))
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
    return build_sentence_transformer(
        tiny_snapshot(EMBEDDER, root), pooling="cls", dense_dims=EMBEDDING_DIMS, normalize=True, seed=6
    )


# gte's remote code (Alibaba-NLP/new-impl), a tiny stand-in written for these tests. It mimics only what the
# adapter relies on: ``model_type "new"``, ``model.new.embeddings`` with a ``position_ids`` buffer and
# ``_init_rope(config)`` that builds ``rotary_emb`` with non-persistent ``inv_freq``/``cos_cached``/
# ``sin_cached`` buffers used in the forward pass, and classes referenced from the weights' config.json as
# ``Alibaba-NLP/new-impl--module.Class`` (resolved at ``code_revision``).
GTE_CONFIGURATION = """
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

GTE_MODELING = """
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
    """gte: write remote code at ``code`` and a tiny checkpoint at ``weights`` (both snapshot folders)."""
    import torch
    from transformers import BertTokenizer

    code.mkdir(parents=True, exist_ok=True)
    (code / "configuration.py").write_text(GTE_CONFIGURATION)
    (code / "modeling.py").write_text(GTE_MODELING)
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


def main(argv: Sequence[str]) -> None:
    """``write_models`` and ``write_voyage_tokenizer`` into the folder ``argv[0]``: tests/runbook's stand-in
    for `models fetch --all`, run in a process forked from ``tests.support.forkserver`` (torch and
    transformers imported there once, not in the test's own process)."""
    write_models(Path(argv[0]))
    write_voyage_tokenizer(Path(argv[0]))
