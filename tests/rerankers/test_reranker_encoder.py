"""Encoder cross-encoder path (bge-v2-m3 layout) on a tiny random BERT in snapshot layout."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from analysis.stats.ranking import rank_by_score
from bench.rerankers.cross_encoder import EncoderCrossEncoder
from tests.rerankers.rerankers_tiny import PASSAGES, QUERY


def test_scores_are_the_crossencoder_predict_scores(bge: Any) -> None:
    res = bge.score(QUERY, PASSAGES)
    assert res.scores.dtype == np.float32 and res.record["n"] == len(PASSAGES)
    expected = bge.model.predict([(QUERY, p) for p in PASSAGES], batch_size=len(PASSAGES))
    np.testing.assert_allclose(res.scores, expected, rtol=0, atol=1e-6)
    assert bge.meta.dtype == "float32" and bge.meta.revision == "953dc6f6f85a1b2dbfca4c34a2796e7dde08d41e"
    assert bge.meta.extra["activation"] == "Sigmoid"


def test_record_counts_real_input_tokens(bge: Any) -> None:
    res = bge.score(QUERY, PASSAGES)
    tok = bge.model.tokenizer
    lengths = [len(tok(QUERY, p)["input_ids"]) for p in PASSAGES]
    assert res.record["max_input_tokens"] == max(lengths) and res.record["truncated_pairs"] == 0
    long = ["berlin " * 100, "hamburg"]
    res = bge.score(QUERY, long)
    assert res.record["max_input_tokens"] == 64 and res.record["truncated_pairs"] == 1


def test_scores_do_not_depend_on_chunk_size_or_batch_company(bge: Any) -> None:
    full = bge.score(QUERY, PASSAGES).scores
    chunked = EncoderCrossEncoder(dataclasses.replace(bge.meta, chunk_size=2), bge.model)
    res = chunked.score(QUERY, PASSAGES)
    assert res.record["chunk_size"] == 2
    np.testing.assert_allclose(res.scores, full, atol=1e-6)
    alone = np.array([bge.score(QUERY, [p]).scores[0] for p in PASSAGES])
    np.testing.assert_allclose(alone, full, atol=1e-6)
    reversed_scores = bge.score(QUERY, PASSAGES[::-1]).scores[::-1]
    np.testing.assert_allclose(reversed_scores, full, atol=1e-6)


def test_cuda_oom_halves_the_chunk_and_records_it(bge: Any) -> None:
    import torch

    class Flaky(EncoderCrossEncoder):
        def _forward(self, features: dict[str, Any]) -> Any:
            if features["input_ids"].shape[0] > 3:
                raise torch.cuda.OutOfMemoryError("simulated")
            return super()._forward(features)

    flaky = Flaky(bge.meta, bge.model)
    res = flaky.score(QUERY, PASSAGES)
    assert res.record["chunk_size"] == 3  # 6 -> 3
    np.testing.assert_allclose(res.scores, bge.score(QUERY, PASSAGES).scores, atol=1e-6)
    assert flaky.score(QUERY, PASSAGES[:5]).record["chunk_size"] == 3  # the halved size is kept


def test_empty_input_and_ties_go_through_rank_by_score(bge: Any) -> None:
    assert bge.score(QUERY, []).record == {
        "n": 0,
        "max_input_tokens": 0,
        "truncated_pairs": 0,
        "chunk_size": 0,
        "ties": 0,
    }
    res = bge.score(QUERY, ["Zug", "Berlin", "Zug"])  # identical passages score identically
    assert res.record["ties"] == 2
    ranked = [d for d, _ in rank_by_score(["a", "b", "c"], res.scores.tolist())]
    assert ranked.index("a") < ranked.index("c")


@pytest.mark.parametrize("dtype", ["bfloat16"])
def test_half_precision_is_upcast(models_root: Any, dtype: str) -> None:
    from bench.core.plan import RERANKERS
    from bench.rerankers.registry import load_reranker
    from bench.rerankers.snapshots import snapshot_path

    plan = RERANKERS["bge-v2-m3"]
    assert plan.revision is not None
    r = load_reranker(
        "bge-v2-m3",
        snapshot_dir=snapshot_path(plan.model, plan.revision, models_root),
        dtype=dtype,
        max_length=64,
    )
    res = r.score(QUERY, PASSAGES)
    assert r.meta.dtype == dtype and res.scores.dtype == np.float32
