"""Which checks each step of docs/runbook.md needs, and the run of them (``bench doctor [STEP]``).

Without a step, ``prepare`` (step 0): the machine as a whole (interpreter, packages, GPU, the reference
environments). Every step gets the interpreter, packages and CPU checks; the GPU steps the six GPU
checks; the others what their commands read (Typesense, API keys, disk, memory). Offline: nothing but
loopback (Typesense) and local processes (the reference interpreters) is asked.
"""

from __future__ import annotations

from bench.doctor import checks, gpu, gpu_kernels, server_probes, space
from bench.doctor.machine import Machine
from bench.doctor.outcome import Check, Outcome, cannot_tell

BASE: tuple[Check, ...] = (checks.python, checks.packages, checks.cpu)
GPU: tuple[Check, ...] = (
    gpu.nvml,
    gpu.driver,
    gpu.gpu,
    gpu.matmul,
    gpu_kernels.attention,  # the models' attention kernel and free memory, own module
    gpu_kernels.gpu_memory,
)
DEFAULT_STEP = "prepare"

STEP_CHECKS: dict[str, tuple[Check, ...]] = {
    "prepare": (*BASE, *GPU, checks.references),
    "stamp": BASE,
    "data": (*BASE, space.disk_data),
    "models": (*BASE, space.disk_models),
    "first-stages": (*BASE, *GPU, checks.typesense, server_probes.typesense_probes, space.keyword_full),
    "check-adapters": (*BASE, *GPU, checks.references, checks.keys),
    "quality": (*BASE, *GPU, checks.keys),
    "determinism": (*BASE, *GPU),
    "dtype-check": (*BASE, *GPU),
    "pitfalls": (*BASE, *GPU),
    "int8": BASE,
    "latency-gpu": (*BASE, *GPU),
    "latency-desktop": (*BASE, checks.typesense),
    "latency-cpu": BASE,
    "latency-api": (*BASE, checks.keys),
    "costs-inputs": BASE,
    "prices": BASE,
    "judged": (*BASE, checks.keys),
    "report": BASE,
    "audit": (*BASE, *GPU),  # `bench reproduce` reruns two models on the GPU
    "stamp-later": BASE,
}


def run_checks(machine: Machine, step: str = DEFAULT_STEP) -> list[Outcome]:
    """Every outcome of the step's checks, in the registry's order; a check that crashes is "cannot tell"
    with its error (the doctor never stops half-way)."""
    out: list[Outcome] = []
    for check in STEP_CHECKS[step]:
        try:
            out += check(machine, step)
        except Exception as exc:  # one broken reading must not hide the other checks' findings
            out.append(cannot_tell(check.__name__, f"the check failed: {type(exc).__name__}: {exc}"))
    return out
