"""Fixtures of the int8 tests."""

from __future__ import annotations

import fcntl
import os

import pytest

from tests.int8.tiny_int8 import TinyInt8, build_tiny_int8, shared_tiny_int8


@pytest.fixture(scope="session")
def tiny_int8(tmp_path_factory: pytest.TempPathFactory) -> TinyInt8:
    """The tiny int8 feature-extraction model (tests/int8/tiny_int8.py), quantised once per test run for
    tests/int8/test_quantize_tiny.py and tests/int8/test_isa_benchmark.py; tests read it, never change it.
    Under pytest-xdist the two files may run on different workers: the first worker to ask quantises it under
    a file lock in the folder all workers of the run share, the other waits and reads it (one quantisation per
    run, about 6 CPU-s, not one per worker)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return build_tiny_int8(tmp_path_factory.mktemp("tiny-int8"))
    shared = tmp_path_factory.getbasetemp().parent
    with (shared / "tiny-int8.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the others wait here while the first makes it
        return shared_tiny_int8(shared / "tiny-int8")
