"""The timed unit is the plan's (the model's own input tokenisation, the forward passes, the
scores out), the same for every adapter. Inside the latency timer (``RerankerCaller``) this counts tokenizer
calls and host reads of tensors (``tolist``/``item``: each one a GPU-to-CPU synchronisation on CUDA;
``cpu``/``numpy``: the scores out), for every torch adapter family: the encoder cross-encoders (bge, and gte
through the same class), the decoders (Qwen3, mxbai), Querit and jina. Before the fix jina tokenised the query
and every document again and its forward hook read the token ids on the host per forward pass, and the
cross-encoders tokenised every full-length pair again without truncation, all inside the clock."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from bench.latency.callers import RerankerCaller
from bench.latency.harness import Call
from bench.rerankers.jina import JinaListwise
from bench.rerankers.protocol import RerankerMeta
from bench.rerankers.querit import QueritReranker
from bench.rerankers.registry import load_reranker
from tests.support.tiny_models import build_word_tokenizer, tiny_snapshot

pytestmark = pytest.mark.model
T = TypeVar("T")
META = RerankerMeta(
    id="t", model="org/t", revision="r", dtype="float32", device="cpu", chunk_size=None, listwise=False
)
WORDS = "berlin ist die hauptstadt von deutschland und liegt an der spree im osten des landes".split()
K = 6


def passages() -> list[str]:
    # lengths 4..40 words: the longest reach the tiny models' maximum length, so truncation is counted
    return [" ".join((WORDS * 3)[: 4 + 7 * i]) for i in range(K)]


class Region:
    """A timer that marks its call as the timed region; counts are kept for inside and outside it."""

    description = "test timer"

    def __init__(self) -> None:
        self.inside = False
        self.counts: dict[bool, Counter[str]] = {True: Counter(), False: Counter()}

    def time(self, fn: Callable[[], T]) -> tuple[T, int, int | None]:
        self.inside = True
        try:
            return fn(), 1, None
        finally:
            self.inside = False

    def count(self, what: str) -> None:
        self.counts[self.inside][what] += 1


@contextmanager
def counting(region: Region, tokenizer: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    import torch

    def wrap(owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        def counted(*args: Any, **kw: Any) -> Any:
            region.count(label)
            return original(*args, **kw)

        monkeypatch.setattr(owner, name, counted)

    wrap(type(tokenizer), "__call__", "tokenizer")
    for name in ("tolist", "item", "cpu", "numpy"):
        wrap(torch.Tensor, name, name)
    wrap(torch.cuda, "synchronize", "synchronize")
    yield
    monkeypatch.undo()


def timed_counts(adapter: Any, tokenizer: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Counter[str], Any]:
    region = Region()
    docs = passages()
    call = Call("q1", "wo liegt berlin?", tuple(f"d{i}" for i in range(K)), tuple(docs))
    caller = RerankerCaller(adapter, region)
    with counting(region, tokenizer, monkeypatch):
        obs = caller(call, k=K, pass_=1)
    assert obs.scores is not None and obs.scores.shape == (K,)
    return region.counts[True], obs


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.support.tiny_models import tiny_models_root

    return tiny_models_root(tmp_path_factory.mktemp("models"))


def test_encoder_cross_encoder_times_one_tokenisation_and_the_scores_out(
    tiny_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bge = load_reranker("bge-v2-m3", snapshot_dir=tiny_snapshot("bge-v2-m3", tiny_root), max_length=32)
    inside, obs = timed_counts(bge, bge.tokenizer, monkeypatch)
    assert inside["tokenizer"] == 1  # CrossEncoder.preprocess: the model's input, once per chunk
    assert inside["tolist"] == inside["item"] == inside["synchronize"] == 0
    assert inside["cpu"] == inside["numpy"] == 1  # the chunk's scores out
    assert obs.sample.max_input_tokens == 32  # the bookkeeping still ran, after the clock
    assert bge.log.records[-1]["truncated_pairs"] >= 2


@pytest.mark.parametrize("model", ["qwen3-0.6b", "mxbai-large-v2"])
def test_decoders_time_their_input_building_only(
    tiny_root: Path, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = load_reranker(model, snapshot_dir=tiny_snapshot(model, tiny_root), max_length=80)
    inside, obs = timed_counts(adapter, adapter.fmt.tok, monkeypatch)
    # the vendor format tokenises each pair's parts to cut them (the model's own input tokenisation):
    # Qwen3 one body per pair plus the query head once, mxbai the query and the document per pair
    assert inside["tokenizer"] <= 2 * K + 1
    assert inside["tolist"] == inside["item"] == inside["synchronize"] == 0
    assert inside["cpu"] == inside["numpy"] == 1
    assert obs.sample.max_input_tokens is not None and obs.sample.max_input_tokens > 0
    if model == "qwen3-0.6b":
        assert obs.sample.max_input_tokens == 80 and adapter.log.records[-1]["truncated_pairs"] >= 1


def test_querit_times_one_tokenisation(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.rerankers.test_reranker_querit_jina import SumScore

    tok = build_word_tokenizer(model_max_length=41)
    querit = QueritReranker(META, SumScore(), tok)
    inside, obs = timed_counts(querit, tok, monkeypatch)
    assert inside["tokenizer"] == 1
    assert inside["tolist"] == inside["item"] == inside["synchronize"] == 0
    assert inside["cpu"] == inside["numpy"] == 1
    assert obs.sample.max_input_tokens == 40


def padded_listwise(tokenizer: Any) -> Any:
    """Like jina's ``rerank``: the vendor code tokenises (once) and runs the embeddings on a padded batch of
    two rows (half the documents each), so the adapter's hook sees 2-d token ids with padding."""
    import torch

    class PaddedListwise(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = tokenizer
            self.config = type("Config", (), {"pad_token_id": 0})()
            self.embed = torch.nn.Embedding(len(tokenizer.get_vocab()) + 1, 4)

        def get_input_embeddings(self) -> torch.nn.Module:
            return self.embed

        def rerank(self, query: str, documents: list[str]) -> list[dict[str, Any]]:
            half = len(documents) // 2
            texts = [" ".join([query, *documents[:half]]), " ".join([query, *documents[half:]])]
            rows = self.tok(texts, add_special_tokens=False)["input_ids"]
            width = max(map(len, rows))
            ids = torch.tensor([[0] * (width - len(r)) + [x + 1 for x in r] for r in rows])
            hidden = self.embed(ids).sum(dim=(1, 2))
            base = float(hidden[0]) * 0.0
            return [{"index": i, "relevance_score": base + i} for i in range(len(documents))]

    return PaddedListwise()


def test_jina_adds_nothing_to_the_vendor_call(monkeypatch: pytest.MonkeyPatch) -> None:
    tok = build_word_tokenizer()
    model = padded_listwise(tok)
    # what model.rerank itself does, counted the same way: the adapter may add nothing to it
    region = Region()
    with counting(region, tok, monkeypatch):
        region.inside = True
        model.rerank("wo liegt berlin?", passages())
        region.inside = False
    bare = region.counts[True]
    inside, obs = timed_counts(JinaListwise(META, model, tok), tok, monkeypatch)
    assert inside == bare, (inside, bare)
    assert obs.sample.max_input_tokens is not None and obs.sample.max_input_tokens > 0
