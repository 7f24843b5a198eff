"""A pytest plugin for ``benchmarks/bench_suite.py``: each test phase's wall and CPU seconds, a line each.

Loaded with ``-p suite_timeline`` (this folder on ``PYTHONPATH``); writes only when ``BENCH_SUITE_TIMELINE``
names a folder, one file per test process (``<xdist worker or main>.tsv``). A line: phase (setup, call,
teardown), node id, start and end (epoch seconds), the process's own CPU seconds in the phase and those of the
children it reaped in the phase (``os.times``: a server that a session fixture stops is counted in the
teardown that reaps it; a process reaped by a grandparent is not counted at all)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

ENV = "BENCH_SUITE_TIMELINE"
_out: list[IO[str]] = []


def _write(*fields: object) -> None:
    folder = os.environ.get(ENV)
    if not folder:
        return
    if not _out:
        name = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _out.append((Path(folder) / f"{name}.tsv").open("a", encoding="utf-8", buffering=1))
    _out[0].write("\t".join(str(f).replace("\t", " ") for f in fields) + "\n")


@contextmanager
def _timed(phase: str, item: pytest.Item) -> Iterator[None]:
    start, before = time.time(), os.times()
    try:
        yield
    finally:
        after = os.times()
        own = after.user + after.system - before.user - before.system
        reaped = after.children_user + after.children_system - before.children_user - before.children_system
        _write(phase, item.nodeid, f"{start:.6f}", f"{time.time():.6f}", f"{own:.2f}", f"{reaped:.2f}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[Any]:
    with _timed("setup", item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[Any]:
    with _timed("call", item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[Any]:
    with _timed("teardown", item):
        return (yield)
