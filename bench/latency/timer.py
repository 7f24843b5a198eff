"""The clock around one reranker call (plan section "Latency": monotonic clock; GPU timing uses
``torch.cuda.synchronize()``; the CUDA-event time is a second column so a reviewer sees both agree).

``WallTimer`` reads ``time.perf_counter_ns`` before and after the call. ``CudaTimer`` synchronises before
the start (earlier queued kernels are not billed to this call), records a CUDA event pair around the call,
and synchronises again before reading the stop clock, so the wall time ends when the call's kernels have
finished. It talks to ``torch.cuda`` through the few names it needs (``synchronize``, ``Event``), so tests
drive it with a fake and no GPU.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from bench.core.errors import BenchError

T = TypeVar("T")


class CallTimer(Protocol):
    description: str

    def time(self, fn: Callable[[], T]) -> tuple[T, int, int | None]:
        """``(fn(), wall ns, CUDA-event ns or None)``; exceptions of ``fn`` propagate unchanged."""
        ...


class WallTimer:
    description = "time.perf_counter_ns immediately before and after the adapter's score() call"

    def time(self, fn: Callable[[], T]) -> tuple[T, int, int | None]:
        start = time.perf_counter_ns()
        result = fn()
        return result, time.perf_counter_ns() - start, None


class CudaTimer:
    description = (
        "torch.cuda.synchronize(), then time.perf_counter_ns and a CUDA start event; the adapter's score() "
        "call; a CUDA stop event, torch.cuda.synchronize(), then time.perf_counter_ns (cuda_ns: elapsed time "
        "between the two events)"
    )

    def __init__(self, cuda: Any) -> None:
        self._cuda = cuda

    def time(self, fn: Callable[[], T]) -> tuple[T, int, int | None]:
        cuda = self._cuda
        begin, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        cuda.synchronize()
        start = time.perf_counter_ns()
        begin.record()
        result = fn()
        end.record()
        cuda.synchronize()
        stop = time.perf_counter_ns()
        return result, stop - start, round(float(begin.elapsed_time(end)) * 1e6)  # ms -> ns


def require_cuda(cuda: Any | None = None) -> Any:
    """``torch.cuda`` if a CUDA device is usable; a one-line BenchError naming the fix otherwise."""
    if cuda is None:
        try:
            # lazy: torch is heavy and is needed only here
            import torch
        except ModuleNotFoundError:
            raise BenchError(
                "CUDA requested but torch is not installed; run `uv sync` on the GPU machine."
            ) from None
        cuda = torch.cuda
    if not cuda.is_available():
        raise BenchError(
            "CUDA requested (bench latency gpu) but torch.cuda.is_available() is False on this machine; "
            "run it on the GPU desktop inside the container with the GPU passed through, or use "
            "`bench latency cpu`."
        )
    return cuda


def timer_for(device: str, cuda: Any | None = None) -> CallTimer:
    """The timer of a device: ``CudaTimer`` for ``cuda...`` (refused without CUDA), else ``WallTimer``."""
    if device.startswith("cuda"):
        return CudaTimer(require_cuda(cuda))
    return WallTimer()
