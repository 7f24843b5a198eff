"""Fixtures of the judged-sample tests: a small prepared packet and a loopback Messages API server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.judged.packet import write_prepared
from bench.judged.selection import select
from tests.judged.judged_inputs import tiny_inputs
from tests.support.messages_api import MessagesServer


@pytest.fixture
def prepared(tmp_path: Path) -> Path:
    groups, qrels, queries, texts = tiny_inputs()
    selection = select(groups, qrels, per_group=4, control_relevant=2, control_not_relevant=2)
    out = tmp_path / "judged"
    write_prepared(out, selection, queries, texts, {"test": True})
    return out


@pytest.fixture
def server() -> Iterator[MessagesServer]:
    s = MessagesServer()
    yield s
    s.close()
