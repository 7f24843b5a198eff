"""Fixtures of the int8 tests.

Quantising calls ``gc.collect()`` four times (optimum-intel's export); with torch, transformers, OpenVINO and
nncf imported each full collection looks at about a million objects (1-2 CPU-s per quantisation). So the
fixtures that quantise import what ``quantize_model`` imports first and then freeze the process's long-lived
objects (``ready_to_quantize``, tests/support/heap.py), and before each test's call they are frozen as in
tests/quality: the collections look at what the quantisation made. Objects are still freed as before."""

from __future__ import annotations

import fcntl
import os

import pytest

from tests.int8.tiny_int8 import TinyInt8, build_tiny_int8, shared_tiny_int8
from tests.support.heap import freeze_long_lived


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    freeze_long_lived()


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
