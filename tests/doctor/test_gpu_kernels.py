"""`bench doctor`'s GPU checks beyond the matrix product, through the machine seam: the models' attention
kernel (scaled dot-product attention with a padding mask, fp16 and bf16) and the GPU's free memory against the
largest local model's weights. The kernel's own computation runs here on the CPU; the GPU side through the
seam."""

from __future__ import annotations

import dataclasses

import pytest

from bench.doctor import gpu_kernels
from bench.doctor.machine import Machine, TorchReading, Unreadable
from bench.doctor.outcome import Outcome
from bench.doctor.steps import GPU, STEP_CHECKS, run_checks
from tests.conftest import REPO_ROOT

GIB = 2**30


def here(**changes: object) -> Machine:
    return dataclasses.replace(Machine.here(), **{"root": REPO_ROOT, **changes})  # type: ignore[arg-type]


def _torch() -> TorchReading:
    return TorchReading("2.15.0+cu132", "13.2", True, ("RTX 5070 Ti",), (12, 0), ("sm_120",))


def _problems_with_fix(outcomes: list[Outcome]) -> list[Outcome]:
    found = [o for o in outcomes if o.state == "problem"]
    for o in found:
        assert o.fix and "\n" not in o.line() and o.line().endswith(f"; fix: {o.fix}"), o
    return found


def test_both_checks_run_in_every_gpu_step() -> None:
    assert gpu_kernels.attention in GPU and gpu_kernels.gpu_memory in GPU
    for step in ("prepare", "check-adapters", "quality", "latency-gpu", "dtype-check"):
        assert gpu_kernels.attention in STEP_CHECKS[step] and gpu_kernels.gpu_memory in STEP_CHECKS[step]


def test_sdpa_with_a_padding_mask_is_within_its_tolerance_on_the_cpu() -> None:
    """The check's own computation on the CPU: fp16 and bf16 SDPA with padded keys against float64, within the
    stated tolerance and not trivially exact."""
    results = gpu_kernels.gpu_sdpa(device="cpu")
    assert [r[0] for r in results] == ["float16", "bfloat16"]
    for name, err, rtol in results:
        assert 0 < err <= rtol, (name, err, rtol)


def test_attention_outcomes_through_the_seam() -> None:
    seam = here(torch=_torch, attention=lambda: [("float16", 5e-3, 2e-3), ("bfloat16", 1e-3, 1.6e-2)])
    out = gpu_kernels.attention(seam, "quality")
    assert [o.state for o in out] == ["problem", "ok"]
    assert "float16 SDPA 4x8x128x64 with padding mask" in _problems_with_fix(out)[0].message

    def broken() -> list[tuple[str, float, float]]:
        raise RuntimeError("CUDA error: no kernel image is available for execution on the device")

    (p,) = _problems_with_fix(gpu_kernels.attention(here(torch=_torch, attention=broken), "quality"))
    assert "no kernel image" in p.message
    assert gpu_kernels.attention(here(), "quality")[0].state == "cannot tell"  # this machine: no GPU


def test_free_gpu_memory_against_the_largest_model() -> None:
    weights = {"gte-base": 1 * GIB, "qwen3-4b": 8 * GIB, "querit-4b": 7 * GIB}
    display = here(model_weights=lambda: weights, gpu_memory=lambda: (int(9.5 * GIB), 16 * GIB))
    (p,) = _problems_with_fix(gpu_kernels.gpu_memory(display, "latency-gpu"))
    assert "qwen3-4b's weights 8.0 GiB + 2.0 GiB headroom need 10.0 GiB" in p.message
    assert "9.5 GiB free of 16.0 GiB" in p.message and "display" in p.fix
    idle = here(model_weights=lambda: weights, gpu_memory=lambda: (15 * GIB, 16 * GIB))
    (o,) = gpu_kernels.gpu_memory(idle, "x")
    assert o.state == "ok"
    (c,) = gpu_kernels.gpu_memory(here(model_weights=dict), "x")
    assert c.state == "cannot tell" and "no model snapshot" in c.message


def test_no_gpu_here_cannot_tell_and_the_doctor_does_not_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable() -> tuple[int, int]:
        raise Unreadable("no CUDA GPU (torch.cuda.is_available() is False)")

    (c,) = gpu_kernels.gpu_memory(here(model_weights=lambda: {"qwen3-4b": GIB}, gpu_memory=unreadable), "x")
    assert c.state == "cannot tell"
    checks = {o.check for o in run_checks(here(), "latency-gpu")}
    assert {"attention", "gpu-memory"} <= checks
