"""Fast streaming SHA-256 of files (``datasets.lock`` verification, manifests, timestamps).

hashlib's SHA-256 is OpenSSL's and releases the GIL for large updates, so the only thing that decides the
speed is I/O: one reusable buffer filled with ``readinto`` (no per-chunk allocation), large enough that the
per-call overhead vanishes. ``benchmarks/bench_lock_verify.py`` compares this with ``openssl dgst -sha256``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

BUFFER_BYTES = 4 * 1024 * 1024


def sha256_file(path: str | os.PathLike[str], *, on_bytes: Callable[[int], None] | None = None) -> str:
    """The hex SHA-256 of the file at ``path``, streamed; ``on_bytes(n)`` is called after each chunk."""
    digest = hashlib.sha256()
    buf = bytearray(BUFFER_BYTES)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        if hasattr(os, "posix_fadvise"):
            try:
                os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
            except OSError:  # not supported on this file system; only a hint
                pass
        while True:
            n = fh.readinto(view)
            if not n:
                break
            digest.update(view[:n])
            if on_bytes is not None:
                on_bytes(n)
    return digest.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_size(path: Path) -> int:
    return path.stat().st_size
