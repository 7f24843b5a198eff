"""The GPU day's check functions (``tests/gpu/checks.py``) run on the CPU where they have a CPU form, so the
code ``benchmarks/gpu_check.sh`` runs is exercised before any GPU is at hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.gpu import checks

pytestmark = pytest.mark.model


class FakeCuda:
    """``synchronize`` and events timed by the wall clock: the CPU stand-in of ``torch.cuda``."""

    def synchronize(self) -> None:
        pass

    class Event:
        def __init__(self, enable_timing: bool = True) -> None:
            self.t = 0

        def record(self) -> None:
            import time

            self.t = time.perf_counter_ns()

        def elapsed_time(self, end: Any) -> float:
            return (end.t - self.t) / 1e6


def test_timer_against_events_on_the_cpu() -> None:
    got = checks.timer_against_events(FakeCuda(), "cpu", calls=3)
    assert len(got["wall_ns"]) == 3 and 1.0 <= got["min_ratio"] <= got["max_ratio"]


def test_sampler_cost_runs_with_host_probes() -> None:
    from bench.latency.telemetry import host_probes

    got = checks.sampler_cost(host_probes(), "cpu", calls=3)
    assert got["alone_ms"] > 0 and got["beside_ms"] > 0 and got["ticks_last_block"] >= 1


def test_oom_path_with_a_stand_in_error() -> None:
    """On the CPU nothing runs out of memory; the stand-in adapter raises torch's own error above 30 pairs."""
    import torch

    class Limited(checks.MemoryHungry):
        def _forward(self, features: dict[str, Any]) -> Any:
            if int(features["x"].shape[0]) > 30:
                self.sizes.append(int(features["x"].shape[0]))
                raise torch.OutOfMemoryError("CUDA out of memory (stand-in)")
            return super()._forward(features)

    adapter = Limited("cpu", bytes_per_pair=4)
    assert adapter.settle_chunk_size("q", ["Text"] * 100) == 25
    assert adapter.sizes[:2] == [100, 50] and adapter.oom_events == 2
    got = checks.oom_path("cpu", bytes_per_pair=4)
    assert got["settled"] == 100 and got["allocated_before"] is None  # no CUDA: nothing to read


def test_family_scores_on_the_cpu(tmp_path: Path) -> None:
    from tests.support.tiny_models import write_models

    got = checks.family_scores(write_models(tmp_path / "models"), "cpu", "float32")
    assert set(got) == set(checks.LOCAL_FAMILIES)
    for model, res in got.items():
        assert "error" not in res, (model, res)
        assert len(res["scores"]) == 8


def test_reference_peak_on_the_cpu(tmp_path: Path) -> None:
    got = checks.reference_peak(checks.real_vocab_qwen3(tmp_path), "cpu", batch=4, words=40)
    assert got["scores"] == 4 and got["peak_allocated_bytes"] is None and "CUDA" in got["unmeasured"]
