"""The GPU checks: ``test_gpu.py`` is marked ``gpu`` and skipped where torch sees no CUDA
device; ``benchmarks/gpu_check.sh`` runs it on the GPU machine (under 10 minutes) and keeps the log of what
each check measured. ``test_checks_on_cpu.py`` runs the same check functions (``checks.py``) on the CPU
wherever they have a CPU form, so the script's code is exercised before any GPU day."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def fresh_card() -> Iterator[None]:
    """The test starts on an emptied card with its peak counters reset, and leaves it so."""
    from bench.core.memory import free_device_memory

    free_device_memory()
    yield
    free_device_memory()
