"""The GPU checks, run by ``benchmarks/gpu_check.sh`` on the GPU machine; skipped without
CUDA. Each prints what it measured (``-s`` in the script): the timer against CUDA events, the NVML sampler's
cost, the out-of-memory path, tiny models of every family in fp16 and bf16, and the Qwen3 reference's memory
at the real vocabulary size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.gpu import checks


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _cuda(), reason="no CUDA device (torch.cuda.is_available() is False)"),
    pytest.mark.usefixtures("fresh_card"),
]


def show(name: str, value: Any) -> None:
    print(f"\nGPU-CHECK {name}: {json.dumps(value, default=str)}")


def test_cuda_timer_agrees_with_cuda_events() -> None:
    import torch

    got = checks.timer_against_events(torch.cuda, "cuda")
    show("timer-vs-events", {k: got[k] for k in ("min_ratio", "max_ratio")} | {"cuda_ns": got["cuda_ns"][:5]})
    # the wall clock covers the events and the two synchronisations: never shorter, and close for ~ms calls
    assert 0.98 <= got["min_ratio"] and got["max_ratio"] <= 1.5


def test_nvml_sampler_cost() -> None:
    from bench.latency.gpu import GpuProbe
    from bench.latency.telemetry import host_probes

    probe = GpuProbe()
    try:
        got = checks.sampler_cost({**host_probes(), "gpu": probe.sample}, "cuda")
    finally:
        probe.close()
    show("nvml-sampler-cost", got)
    assert got["ticks_last_block"] > 0
    assert got["overhead"] < 0.05  # at ten times the study's sampling rate


def test_out_of_memory_path_settles_and_frees() -> None:
    import torch

    free, _ = torch.cuda.mem_get_info()
    got = checks.oom_path("cuda", bytes_per_pair=int(free * 0.9) // 30)  # about 30 pairs fit
    show("oom-path", got)
    assert got["oom_events"] >= 1 and got["settled"] <= 30 and got["chunk_after"] == got["settled"]
    assert max(got["sizes"][got["oom_events"] :]) <= got["settled"]
    assert got["allocated_after"] <= got["allocated_before"] + 2**20  # the failed passes' memory is back


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tiny_models_of_every_family(tmp_path: Path, dtype: str) -> None:
    import numpy as np

    from tests.support.tiny_models import write_models

    root = write_models(tmp_path / "models")
    gpu = checks.family_scores(root, "cuda", dtype)
    cpu = checks.family_scores(root, "cpu", "float32")
    summary = {}
    for model, got in gpu.items():
        assert "error" not in got, (model, got)
        scores = np.array(got["scores"])
        assert np.isfinite(scores).all() and got["dtype"] == dtype
        ref = np.array(cpu[model]["scores"])
        summary[model] = float(np.abs(scores - ref).max() / max(np.abs(ref).max(), 1e-6))
    show(f"families-{dtype}", summary)


def test_qwen3_reference_memory_at_the_real_vocabulary(tmp_path: Path) -> None:
    snap = checks.real_vocab_qwen3(tmp_path)
    got = checks.reference_peak(snap, "cuda")
    show("qwen3-reference-memory", got)
    assert got["scores"] == 100
    assert got["peak_allocated_bytes"] < got["all_positions_logits_bytes"] / 20
