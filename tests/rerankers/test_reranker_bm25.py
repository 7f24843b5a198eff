"""bm25-standin: BM25 via bm25s over a corpus, checked against the Lucene BM25 formula written
out here from the same tokens (document frequencies and lengths of the whole corpus, not the candidates)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.core.errors import BenchError
from bench.data.bundled import load_sample
from bench.rerankers.bm25 import BM25_PARAMS, BM25Standin, german_tokenizer
from bench.rerankers.protocol import Reranker
from bench.rerankers.registry import STANDIN_IDS, load_reranker


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    sample = load_sample()
    return [p.passage_text for p in sample.nomiracl[:200]]


def _reference(corpus: list[str], query: str, docs: list[int]) -> np.ndarray:
    """Lucene BM25 (Lucene >= 8, as bm25s's method 'lucene'): idf = ln(1 + (N - df + 0.5) / (df + 0.5)),
    term score = idf * tf / (tf + k1 * (1 - b + b * dl / avgdl)), summed over the query's terms."""
    tok = german_tokenizer()
    tokens = tok.tokenize(corpus, return_as="string", show_progress=False)
    n = len(corpus)
    avgdl = sum(len(t) for t in tokens) / n
    df: dict[str, int] = {}
    for t in tokens:
        for w in set(t):
            df[w] = df.get(w, 0) + 1
    q = [
        w
        for w in tok.tokenize([query], update_vocab=False, return_as="string", show_progress=False)[0]
        if w in df
    ]
    k1, b = BM25_PARAMS["k1"], BM25_PARAMS["b"]
    out = []
    for i in docs:
        dl, score = len(tokens[i]), 0.0
        for w in q:
            tf = tokens[i].count(w)
            idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
            score += idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))
        out.append(score)
    return np.asarray(out)


def test_scores_equal_the_lucene_formula_with_corpus_statistics(corpus: list[str]) -> None:
    model = BM25Standin(corpus)
    assert isinstance(model, Reranker)
    query = "Welche Sprache spricht man in der Schweiz?"
    docs = [5, 17, 0, 120, 3, 42, 199]
    got = model.score(query, [corpus[i] for i in docs])
    ref = _reference(corpus, query, docs)
    assert got.scores.dtype == np.float32
    np.testing.assert_allclose(got.scores, ref, rtol=2e-6, atol=1e-6)
    # the whole corpus: some passage matches (the test would pass vacuously on zeros otherwise)
    full = model.score(query, corpus).scores
    np.testing.assert_allclose(
        full, _reference(corpus, query, list(range(len(corpus)))), rtol=2e-6, atol=1e-6
    )
    assert full.max() > 1.0


def test_pointwise_and_order_free(corpus: list[str]) -> None:
    model = BM25Standin(corpus)
    query = "Geschichte der Stadt Berlin"
    a = model.score(query, corpus[:50]).scores
    b = model.score(query, corpus[:50][::-1]).scores[::-1]
    c = model.score(query, corpus[10:20]).scores
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[10:20], c)


def test_record_and_degenerate_input(corpus: list[str]) -> None:
    model = BM25Standin(corpus)
    empty = model.score("egal", [])
    assert empty.record["n"] == 0 and empty.scores.shape == (0,)
    none = model.score("xqzv qqqq", corpus[:5])  # no query term in the corpus: zeros, all tied
    assert none.scores.tolist() == [0.0] * 5 and none.record["ties"] == 5
    rec = model.score("Berlin", corpus[:3]).record
    assert rec["truncated_pairs"] == 0 and rec["max_input_tokens"] is not None and rec["max_input_tokens"] > 0
    with pytest.raises(BenchError, match="not a passage of the corpus"):
        model.score("Berlin", ["Ein Text, der nicht im Korpus steht."])
    assert model.meta.id == "bm25-standin" and "not a plan model" in model.meta.implementation


def test_registry_needs_the_corpus(corpus: list[str]) -> None:
    assert "bm25-standin" in STANDIN_IDS
    with pytest.raises(BenchError, match="needs the corpus"):
        load_reranker("bm25-standin")
    with pytest.raises(BenchError, match="takes no corpus"):
        load_reranker("minilm-standin", corpus=corpus)
    model = load_reranker("bm25-standin", corpus=corpus)
    assert model.meta.extra["corpus_passages"] == len(corpus)
