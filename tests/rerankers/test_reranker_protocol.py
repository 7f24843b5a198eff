"""The protocol's records and result type (no torch)."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.stats.ranking import rank_by_score
from bench.rerankers.protocol import (
    RecordLog,
    Reranker,
    RerankerMeta,
    ScoreResult,
    count_ties,
    make_result,
    package_versions,
    summarise,
)
from tests.support.fakes import FakeReranker

META = RerankerMeta(
    id="x", model="org/x", revision="r", dtype="float32", device="cpu", chunk_size=None, listwise=False
)


def test_score_result_requires_float32_and_matching_n() -> None:
    rec = make_result([1.0, 2.0], max_input_tokens=3, truncated_pairs=0, chunk_size=2).record
    with pytest.raises(TypeError):
        ScoreResult(scores=np.array([1.0, 2.0]), record=rec)
    with pytest.raises(ValueError):
        ScoreResult(scores=np.array([1.0], dtype=np.float32), record=rec)
    with pytest.raises(ValueError):
        make_result([1.0, float("nan")], max_input_tokens=1, truncated_pairs=0, chunk_size=2)


def test_make_result_upcasts_half_precision_exactly_and_counts_ties() -> None:
    import torch

    bf16 = torch.tensor([0.5, 0.50001, 0.25, 1.0], dtype=torch.bfloat16)  # 0.5 and 0.50001 collapse
    res = make_result(bf16.float().numpy(), max_input_tokens=7, truncated_pairs=1, chunk_size=4)
    assert res.scores.dtype == np.float32
    assert res.scores.tolist() == bf16.float().tolist()
    assert res.record == {"n": 4, "max_input_tokens": 7, "truncated_pairs": 1, "chunk_size": 4, "ties": 2}
    assert count_ties(np.array([], dtype=np.float32)) == 0
    assert count_ties(np.array([1, 1, 1, 2, 2, 3], dtype=np.float32)) == 5


def test_ties_are_broken_by_first_stage_order() -> None:
    res = make_result([0.5, 0.9, 0.5, 0.9], max_input_tokens=1, truncated_pairs=0, chunk_size=4)
    ranked = rank_by_score(["d1", "d2", "d3", "d4"], res.scores.tolist())
    assert [d for d, _ in ranked] == ["d2", "d4", "d1", "d3"]


def test_summarise_aggregates_calls() -> None:
    log = RecordLog()
    log.add(make_result([1.0, 2.0], max_input_tokens=10, truncated_pairs=1, chunk_size=2))
    log.add(make_result([3.0, 3.0, 1.0], max_input_tokens=30, truncated_pairs=2, chunk_size=1))
    log.add(make_result([], max_input_tokens=0, truncated_pairs=0, chunk_size=0))
    out = log.summary(META)
    assert out["calls"] == 3 and out["pairs"] == 5
    assert out["max_input_tokens"] == 30 and out["truncated_pairs"] == 3 and out["ties"] == 2
    assert out["chunk_size_min"] == 1 and out["chunk_size_max"] == 2
    assert out["meta"]["model"] == "org/x" and out["meta"]["revision"] == "r"
    assert summarise(META, [])["max_input_tokens"] == 0


def test_package_versions_and_protocol_shape() -> None:
    versions = package_versions(("numpy", "surely-not-installed-pkg"))
    assert versions["numpy"] == np.__version__ and versions["surely-not-installed-pkg"] == "absent"

    assert isinstance(FakeReranker(), Reranker)  # the tests' one fake (tests/support/fakes.py)
    assert not isinstance(object(), Reranker)
