"""The review tests audit example studies in this process (the audit's recompute of the report draws with
matplotlib and reads with pyarrow): before each test's call the process's long-lived objects are frozen
when many have appeared, as in tests/quality (tests/support/heap.py), so the garbage collector's full
collections look at what the test made."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.support import audit_memo
from tests.support.heap import freeze_long_lived
from tests.support.pyforks import CLI_RUN_TIME, Interpreters

# what the reviewer's commands of test_review_env and `bench audit --example` (test_example) import first,
# none of it heavy: the server imports it once; each run is still a process of this interpreter whose
# sys.modules the tests read (the preloads among them, so one that imported torch would fail them all)
REVIEW_PRELOAD = ("bench.cli", "bench.audit.cli", "bench.integrity.cli", "analysis.cli")


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


@pytest.fixture(scope="session")
def review_python() -> Iterator[str]:
    """The stand-in for this environment's ``python`` whose runs fork from one server that has imported
    :data:`REVIEW_PRELOAD` (tests/support/pyforks.py): a fresh process per run, its own argv, streams and
    exit status, without each run importing the command line again. Its CPU (the runs' included) is printed
    at the end, as tests/equality prints its servers'."""
    interpreters = Interpreters()
    try:
        yield interpreters.wrapper("review", sys.executable, REVIEW_PRELOAD, run_time=CLI_RUN_TIME)
    finally:
        interpreters.close()
        print(f"review: the fork server took {interpreters.cpu_s:.1f} s CPU", file=sys.stderr)
