"""Give freed heap memory back to the operating system between the steps of a long command.

glibc keeps memory that Python, torch and OpenVINO have freed in its arenas, so a process's resident size
stays at the high-water mark of every earlier step. ``release_memory`` runs the garbage collector and then
glibc's ``malloc_trim(0)`` (malloc_trim(3)); elsewhere (another C library, not Linux) only the collector
runs. It frees nothing that is still referenced, so results cannot change.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def release_memory() -> bool:
    """Collect garbage and trim the C heap; True when ``malloc_trim`` ran and gave memory back."""
    gc.collect()
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # musl and others have no malloc_trim
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return bool(trim(0))


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a heavy library is imported (sentence-transformers with torch
    and transformers, optimum with OpenVINO and nncf: hundreds of thousands of objects that live as long as
    the process, over which its passes cost a CPU-second and more: ``import sentence_transformers`` 8.0 ->
    7.0 CPU-s, 2026-12-06), on again afterwards if it was on. Garbage made meanwhile waits for the next
    collection; results cannot change."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def freeze_long_lived() -> bool:
    """Collect, then move every object that survives out of the cyclic collector's view (``gc.freeze``), once
    the libraries a long command needs are imported (torch, transformers, sentence-transformers: about half a
    million objects that live as long as the process). Every later full collection (``free_device_memory``'s
    after each model) then walks only what was made since. A frozen object is still freed when its last
    reference goes; only a reference cycle among frozen objects waits for ``thaw``.

    Returns True when nothing was frozen before: the caller then runs ``thaw`` when it ends (the interpreter's
    last collection skips frozen objects, and nanobind would report triton's as leaked). In a process that
    froze objects itself (the tests' processes, tests/conftest.py and tests/support/heap.py) they stay frozen:
    that process unfreezes at its exit."""
    first = gc.get_freeze_count() == 0
    gc.collect()
    gc.freeze()
    return first


def thaw() -> None:
    """Undo ``freeze_long_lived``: the frozen objects are the collector's again (``gc.unfreeze``)."""
    gc.unfreeze()


# --- the GPU's memory (torch's caching allocator), read and freed only where torch is already imported ---


def _torch() -> Any:
    return sys.modules.get("torch")


def cuda_in_use() -> bool:
    """True when torch is imported and has a usable CUDA device (never imports torch, never starts CUDA)."""
    torch = _torch()
    return bool(torch is not None and torch.cuda.is_available())


def free_device_memory() -> None:
    """After a model's last reference is dropped: collect it, give the allocator's cached blocks back to the
    driver and start the peak counters anew, so the next model loads onto an empty card and its peak is its
    own. Call it outside any ``except`` block: a live traceback keeps the failed call's tensors alive."""
    gc.collect()
    if cuda_in_use():
        torch = _torch()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def empty_device_cache() -> None:
    """Collect and give the allocator's cached blocks back (after an out-of-memory error, outside its
    ``except``); the peak counters stay: the block being measured keeps its peak."""
    gc.collect()
    if cuda_in_use():
        _torch().cuda.empty_cache()


def reset_peak_memory() -> None:
    """Start torch's peak counters anew (on CUDA; nothing elsewhere)."""
    if cuda_in_use():
        _torch().cuda.reset_peak_memory_stats()


def peak_memory() -> dict[str, Any]:
    """Peak bytes allocated by tensors and reserved by the allocator since the last reset, on CUDA; on any
    other device both are null with the reason (never 0: nothing was measured)."""
    if not cuda_in_use():
        return {
            "peak_allocated_bytes": None,
            "peak_reserved_bytes": None,
            "unmeasured": "no CUDA device in this process: torch's allocator statistics exist on CUDA only",
        }
    cuda = _torch().cuda
    return {
        "peak_allocated_bytes": int(cuda.max_memory_allocated()),
        "peak_reserved_bytes": int(cuda.max_memory_reserved()),
        "unmeasured": None,
    }


STICKY_TEXTS = (
    "device-side assert",
    "illegal memory access",
    "unspecified launch failure",
    "misaligned address",
    "illegal instruction",
    "cuda error",
)


def is_out_of_memory(exc: BaseException) -> bool:
    """torch's out-of-memory error (or its text): the call may pass with smaller chunks or a freed card."""
    torch = _torch()
    oom_type = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
    if oom_type is not None and isinstance(exc, oom_type):
        return True
    return "out of memory" in str(exc).lower()


def is_sticky_device_error(exc: BaseException) -> bool:
    """A CUDA error that poisons the process's CUDA context (device-side assert, illegal memory access, ...):
    every later call fails the same way, so it is no query's own failure. torch >= 2.8 raises
    ``torch.AcceleratorError`` for these; older releases a ``RuntimeError`` whose text starts "CUDA error"."""
    if is_out_of_memory(exc):
        return False
    torch = _torch()
    sticky_type = getattr(torch, "AcceleratorError", None) if torch is not None else None
    if sticky_type is not None and isinstance(exc, sticky_type):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(t in text for t in STICKY_TEXTS)
