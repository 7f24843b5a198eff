"""Progress lines: items found done already (``skip``) count as done but not in the rate or the ETA."""

from __future__ import annotations

import io

import pytest

import bench.core.progress as progress_mod
from bench.core.progress import Progress


def test_skipped_items_are_done_but_not_in_the_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = [100.0, 100.0]  # construction and __enter__; every later reading is 10 s on

    def clock() -> float:
        return ticks.pop(0) if ticks else 110.0

    monkeypatch.setattr(progress_mod.time, "perf_counter", clock)
    out = io.StringIO()
    with Progress("embed passages", 1000, "passages", stream=out, interval=1e9) as prog:
        prog.skip(800)  # found in the cache
        prog.advance(100)  # encoded in 10 s
        line = prog.line()
    assert line == "embed passages: 900/1000 passages, 10.0/s, elapsed 0:10, ETA 0:10"
