"""The quality tests run phases that collect garbage before every model they load (``free_device_memory``):
right before each test's call (its fixtures set up, their imports done) the process's long-lived objects are
frozen when many have appeared (``tests.support.heap``), so each collection looks at what the test made."""

from __future__ import annotations

import pytest

from tests.support.heap import freeze_long_lived


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    freeze_long_lived()
