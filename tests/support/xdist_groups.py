"""How the suite's tests are shared between pytest-xdist workers (``-n 2``, on by default in pyproject.toml).

xdist's own ``--dist loadgroup`` reads ``xdist_group`` marks into the node ids (``item._nodeid``); pytest 9.2
keeps a node's id elsewhere (``Node._id``), so with pytest 9.2 and xdist 3.8 every mark was ignored and each
test was handed out alone: a test of the shared rehearsal waited on the other worker's rehearsal for over
three minutes, and a module's fixtures were built once per worker. ``GroupScheduling`` takes the scope from
the node id itself, which both versions keep:

- the tests of the session's shared rehearsal (``REHEARSAL_FILES``) are one unit: the worker that makes
  the rehearsal runs them all, and no other worker waits for it;
- every file under a ``ONE_WORKER_FOLDERS`` folder is one unit (their session fixtures are expensive);
- every other module is a unit of its own (module fixtures, such as a loaded collection, are made once).

Units are handed out longest first (``FIRST``: the units that run for minutes, measured with
``--durations``), then by number of tests (xdist's order), each to the worker that is free: the longest
unit otherwise starts last and the other worker idles while it runs. ``check_rehearsal_users`` (run on
every worker) refuses a test that asks for the shared rehearsal from a file not listed here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

REHEARSAL = "rehearsal"
# the files whose tests use the session fixture ``rehearsal`` (tests/conftest.py)
REHEARSAL_FILES = (
    "tests/rehearse/test_end_to_end.py",
    "tests/rehearse/test_quiet.py",
    "tests/rehearse/test_signals.py",
)
# their session fixtures are expensive: the audit's committed study; the equality tests' reference-environment
# servers (tests/equality/conftest.py), started once per worker that runs any of them; the repository-rule
# tests share one parse of every source file (tests/support/sources.py)
ONE_WORKER_FOLDERS = ("tests/audit/", "tests/equality/", "tests/hygiene/")
# the longest units, longest first (docs/performance.md has their figures); then xdist's order
FIRST = (
    "tests/runbook/test_runbook.py",
    REHEARSAL,
    "tests/rehearse/test_quantize_child.py",
    "tests/equality",
    "tests/audit",
    "tests/int8/test_isa_benchmark.py",
    "tests/review/test_fresh_clone.py",
    "tests/hygiene",
    "tests/test_liblog.py",
    "tests/review/test_example.py",
)


def scope_of(nodeid: str) -> str:
    """The unit a test belongs to, from its node id (``path::name[params]``)."""
    path = nodeid.split("::", 1)[0]
    if path in REHEARSAL_FILES:
        return REHEARSAL
    for folder in ONE_WORKER_FOLDERS:
        if path.startswith(folder):
            return folder.rstrip("/")
    return path


class GroupScheduling(LoadScopeScheduling):
    """xdist's scope scheduling with ``scope_of`` as the scope and the ``FIRST`` units at the front."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        self._ordered = False

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)

    def _assign_work_unit(self, node: Any) -> None:
        if not self._ordered:  # the first assignment: the queue is full and nothing is handed out yet
            self._ordered = True
            for name in reversed(FIRST):
                if name in self.workqueue:
                    self.workqueue.move_to_end(name, last=False)
        super()._assign_work_unit(node)


def check_rehearsal_users(items: Sequence[pytest.Item]) -> None:
    """A test that uses the session's ``rehearsal`` fixture must be in a ``REHEARSAL_FILES`` file."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.get("rehearsal", ()) if info is not None else ()
        if defs and defs[-1].scope == "session":
            path = item.nodeid.split("::", 1)[0]
            if path not in REHEARSAL_FILES:
                raise pytest.UsageError(
                    f"{path}: {item.name} uses the shared rehearsal but the file is not in REHEARSAL_FILES "
                    "of tests/support/xdist_groups.py; add it there, or the worker without the rehearsal "
                    "waits for the other one's"
                )
