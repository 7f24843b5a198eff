"""The GPU checks of ``bench doctor``: NVML readable, the driver new enough for torch's CUDA, the GPU
visible with a compute capability torch was built for, and fp16 / bf16 matrix products on the GPU equal to
the CPU's. None of these can run on the development machines (no GPU, no NVML): the tests show the
refusals through the machine seam (``Machine.nvml``, ``Machine.torch``, ``Machine.matmul``)."""

from __future__ import annotations

import re

from bench.doctor.machine import Machine, Unreadable
from bench.doctor.outcome import Outcome, cannot_tell, ok, problem

# The oldest Linux driver of each CUDA major (NVIDIA's CUDA Toolkit release notes, "CUDA Toolkit and
# Minimum Required Driver Version"; docs/field-notes.md: PyPI torch 2.15.0 is +cu132, GeForce needs 580).
MIN_DRIVER = {13: (580,), 12: (525, 60, 13)}
TOOLKIT_FIX = (
    "install NVIDIA driver >= {d} on the host and the NVIDIA Container Toolkit, "
    "then run in the `bench` service"
)
# The matrix products (``gpu_matmul``): N x N inputs uniform in [-1, 1] (seed 0) rounded to the dtype, the
# reference their float64 product on the CPU; the GPU's product in the dtype must be within
# ``max|gpu - ref| <= rtol * max|ref|``, rtol torch.testing's default for the dtype (fp16 1e-3, bf16 1.6e-2),
# above each format's rounding of the result (2**-11 and 2**-8).
MATMUL_N = 256
MATMUL_RTOL = {"float16": 1e-3, "bfloat16": 1.6e-2}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text))


def nvml(m: Machine, step: str) -> list[Outcome]:
    try:
        r = m.nvml()
    except Unreadable as exc:
        return [problem("nvml", str(exc), TOOLKIT_FIX.format(d=580))]
    return [ok("nvml", f"{r.source}: driver {r.driver}, GPUs: {', '.join(r.gpus) or 'none'}")]


def driver(m: Machine, step: str) -> list[Outcome]:
    try:
        r = m.nvml()
    except Unreadable as exc:
        return [cannot_tell("driver", f"no driver version ({exc})")]
    try:
        t = m.torch()
    except Unreadable as exc:
        return [problem("driver", str(exc), "rebuild the image (`docker compose build`)")]
    if t.cuda is None:
        return [
            problem("driver", f"torch {t.version} is a CPU build (no CUDA)", "rebuild the image from uv.lock")
        ]
    major = _version(t.cuda)[0]
    need = MIN_DRIVER.get(major)
    if need is None:
        return [
            cannot_tell(
                "driver",
                f"torch {t.version} is built for CUDA {t.cuda}, whose minimum driver "
                "is not in bench/doctor/gpu.py's table",
            )
        ]
    have = _version(r.driver)
    text = ".".join(map(str, need))
    if have < need:
        return [
            problem(
                "driver",
                f"driver {r.driver}, but torch {t.version} is built for CUDA {t.cuda}, which needs >= {text}",
                TOOLKIT_FIX.format(d=text),
            )
        ]
    return [ok("driver", f"driver {r.driver} >= {text}, torch {t.version}'s CUDA {t.cuda} needs")]


def gpu(m: Machine, step: str) -> list[Outcome]:
    try:
        t = m.torch()
    except Unreadable as exc:
        return [problem("gpu", str(exc), "rebuild the image (`docker compose build`)")]
    if not t.available or t.capability is None:
        return [
            problem(
                "gpu",
                f"torch {t.version} sees no CUDA GPU (torch.cuda.is_available() is False)",
                TOOLKIT_FIX.format(d=580),
            )
        ]
    sm = f"sm_{t.capability[0]}{t.capability[1]}"
    if sm not in t.arch_list:
        return [
            problem(
                "gpu",
                f"{t.devices[0]} is {sm}, torch {t.version} is built for {', '.join(t.arch_list)}",
                "use a torch build for this GPU (a uv.lock change: record it in DEVIATIONS.md)",
            )
        ]
    return [ok("gpu", f"{t.devices[0]} ({sm}) in torch.cuda.get_arch_list()")]


def gpu_matmul(device: str = "cuda") -> list[tuple[str, float, float]]:
    """(dtype, max|product on ``device`` - ref| / max|ref|, rtol) per dtype: see ``MATMUL_RTOL``."""
    # lazy: torch only on a GPU check
    import torch

    gen = torch.Generator().manual_seed(0)
    out = []
    for name, rtol in MATMUL_RTOL.items():
        dtype = getattr(torch, name)
        a = (torch.rand(MATMUL_N, MATMUL_N, generator=gen) * 2 - 1).to(dtype)
        b = (torch.rand(MATMUL_N, MATMUL_N, generator=gen) * 2 - 1).to(dtype)
        ref = a.double() @ b.double()
        got = (a.to(device) @ b.to(device)).double().cpu()
        out.append((name, float((got - ref).abs().max() / ref.abs().max()), rtol))
    return out


def matmul(m: Machine, step: str) -> list[Outcome]:
    try:
        t = m.torch()
    except Unreadable as exc:
        return [cannot_tell("matmul", str(exc))]
    if not t.available:
        return [cannot_tell("matmul", "no CUDA GPU to multiply on (see the gpu check)")]
    try:
        results = (m.matmul or gpu_matmul)()
    except Exception as exc:  # a CUDA error here is the finding: the GPU cannot run the study's kernels
        return [
            problem(
                "matmul",
                f"a {MATMUL_N}x{MATMUL_N} matrix product on the GPU failed ({type(exc).__name__}: {exc})",
                TOOLKIT_FIX.format(d=580),
            )
        ]
    out = []
    for name, err, rtol in results:
        size = f"{MATMUL_N}x{MATMUL_N}"
        text = f"{name} {size} product: GPU vs CPU max error {err:.2e} of max|ref| (limit {rtol:g})"
        out.append(
            ok("matmul", text)
            if err <= rtol
            else problem("matmul", text, "check the GPU (drivers, clocks, hardware) before measuring")
        )
    return out
