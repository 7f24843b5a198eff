"""The registry: plan ids, stand-ins, duplicates, unknown ids."""

from __future__ import annotations

import pytest

from bench.core.errors import BenchError
from bench.core.plan import RERANKERS
from bench.rerankers import registry
from bench.rerankers.registry import STANDIN_IDS, VARIANT_IDS, load_reranker, register, registered_ids


def test_every_plan_model_and_the_standin_is_registered() -> None:
    assert set(registered_ids()) == set(RERANKERS) | set(STANDIN_IDS) | set(VARIANT_IDS)
    assert "minilm-standin" in STANDIN_IDS


def test_duplicate_id_raises() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        register("bge-v2-m3")(lambda model_id, opts: None)  # type: ignore[arg-type,return-value]
    assert registry._REGISTRY["bge-v2-m3"].__name__ == "_encoder"


def test_unknown_id_suggests_near_matches() -> None:
    with pytest.raises(BenchError, match="Did you mean bge-v2-m3"):
        load_reranker("bge-v2m3")


def test_wrong_variants_only_for_decoders_and_chunk_size_positive() -> None:
    with pytest.raises(BenchError, match="wrong variants exist only"):
        load_reranker("bge-v2-m3", variant="right-padding")
    with pytest.raises(BenchError, match="chunk_size"):
        load_reranker("bge-v2-m3", chunk_size=0)
