"""Fixtures of the int8 tests."""

from __future__ import annotations

import pytest

from tests.int8.tiny_int8 import TinyInt8, build_tiny_int8


@pytest.fixture(scope="session")
def tiny_int8(tmp_path_factory: pytest.TempPathFactory) -> TinyInt8:
    """The tiny int8 feature-extraction model (tests/int8/tiny_int8.py), quantised once per test process for
    tests/int8/test_quantize_tiny.py and tests/int8/test_isa_benchmark.py; tests read it, never change it."""
    return build_tiny_int8(tmp_path_factory.mktemp("tiny-int8"))
