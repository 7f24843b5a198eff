"""The review tests audit example studies in this process (the audit's recompute of the report draws with
matplotlib and reads with pyarrow): before each test's call the process's long-lived objects are frozen
when many have appeared, as in tests/quality (tests/support/heap.py), so the garbage collector's full
collections look at what the test made."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import audit_memo
from tests.support.heap import freeze_long_lived


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    freeze_long_lived()


@pytest.fixture(scope="module", autouse=True)
def _audit_work_once() -> Iterator[None]:
    """Each stage figure's numbers drawn, and the bundled sample read, once per process
    (tests/support/audit_memo.py), while this folder's modules run: the in-process audits of the example
    study and its tampered clones recompute the same figure unless a run changed."""
    with audit_memo.installed():
        yield
