"""The review tests audit example studies in this process (the audit's recompute of the report draws with
matplotlib and reads with pyarrow): before each test's call the process's long-lived objects are frozen
when many have appeared, as in tests/quality (tests/support/heap.py), so the garbage collector's full
collections look at what the test made."""

from __future__ import annotations

import pytest

from tests.support.heap import freeze_long_lived


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    freeze_long_lived()
