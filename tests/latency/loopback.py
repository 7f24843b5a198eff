"""Moved to ``tests.support.voyage_api`` (the one fake Voyage API, on the one loopback server); this module
stays only because ``tests/runbook`` imports ``voyage_server`` from here (remove it once that imports from
``tests.support``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.voyage_api import FakeVoyage, Reply, first_stage_order

__all__ = ["Reply", "voyage_server"]


@contextmanager
def voyage_server() -> Iterator[FakeVoyage]:
    with FakeVoyage(score=first_stage_order) as server:
        yield server
