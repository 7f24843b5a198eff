"""The cached stand-in scores like the registry's minilm-standin (same model, passage vectors cached)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.firststage.embed_cache import EmbeddingCache
from bench.rehearse.standin import CachedPassageStandin
from bench.rerankers.registry import load_reranker

pytestmark = pytest.mark.model


def test_cached_scores_equal_registry_scores(tmp_path: Path) -> None:
    inner = load_reranker("minilm-standin", device="cpu")
    cached = CachedPassageStandin(inner, EmbeddingCache(tmp_path / "emb.sqlite"))
    query = "Wann wurde die Universität Heidelberg gegründet?"
    passages = [
        "Die Universität Heidelberg wurde 1386 gegründet.",
        "Berlin ist die Hauptstadt.",
        "Heidelberg liegt am Neckar.\n" + "Wort " * 400,
    ]
    want = inner.score(query, passages)
    first = cached.score(query, passages)
    again = cached.score(query, list(reversed(passages)))
    assert cached.encoded_passages == 3  # the second call read every passage vector from the cache
    np.testing.assert_allclose(first.scores, want.scores, atol=1e-5)
    np.testing.assert_allclose(again.scores[::-1], first.scores, atol=1e-5)
    assert first.record["truncated_pairs"] == want.record["truncated_pairs"] == 1
    assert first.record["max_input_tokens"] == want.record["max_input_tokens"]
    assert cached.meta.id == "minilm-standin" and "embedding cache" in cached.meta.implementation


def test_query_vectors_come_from_the_cache_after_the_first_call(tmp_path: Path) -> None:
    """A query scored again (three depths, two stages) is not encoded again; its scores are bit-identical."""
    inner = load_reranker("minilm-standin", device="cpu")
    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    cached = CachedPassageStandin(inner, cache)
    query = "Wann wurde die Universität Heidelberg gegründet?"
    passages = ["Die Universität Heidelberg wurde 1386 gegründet.", "Berlin ist die Hauptstadt."]
    first = cached.score(query, passages)
    calls: list[list[str]] = []
    encode = cached._encode
    cached._encode = lambda texts: (calls.append(list(texts)), encode(texts))[1]  # type: ignore[method-assign]
    again = cached.score(query, passages)
    assert calls == []  # neither the query nor a passage went through the model
    assert again.scores.tobytes() == first.scores.tobytes()
    assert again.record["max_input_tokens"] == first.record["max_input_tokens"]
    other = cached.score("Wo liegt Heidelberg?", passages)
    assert calls == [["Wo liegt Heidelberg?"]]  # a new query is encoded once, the passages are cached
    np.testing.assert_allclose(other.scores, inner.score("Wo liegt Heidelberg?", passages).scores, atol=1e-5)
    found = cache.get_many(inner.meta.model, inner.meta.revision or "", 384, [query])[0]
    assert found is not None
