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
