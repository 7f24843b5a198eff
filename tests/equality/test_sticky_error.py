"""In adapter check 1: a sticky CUDA error (device-side assert, illegal memory access) stops
the checks with one line saying what to do, instead of marking this and every later model "not rated" with the
same error. Out of memory stays the model's own failure (not rated, with the reason)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from bench.core.errors import BenchError
from bench.equality.data import EqualitySet
from bench.equality.runner import check_one
from tests.quality.test_gpu_day import _accelerator_error
from tests.support.fakes import FakeReranker


@pytest.fixture
def data(queries_factory: Any) -> EqualitySet:
    return EqualitySet(tuple(queries_factory(3, 100)), {"id_map_matching": {}})


def test_sticky_cuda_error_stops_the_check(data: EqualitySet, tmp_path: Path) -> None:
    def poisoned(_: FakeReranker, query: str, passages: Sequence[str]) -> None:
        raise _accelerator_error()

    broken = FakeReranker("qwen3-4b", score="crc32", on_call=poisoned)
    with pytest.raises(BenchError) as info:
        check_one("qwen3-4b", data, loader=lambda m, **kw: broken, model_dir=tmp_path)
    message = info.value.message
    assert "device-side assert" in message and "run the same command again" in message
    assert "\n" not in message.replace("\nCompile", " Compile")
