"""Warm-up belongs to a process: after a resume, the new process's first calls are warm-up again and are
not timed."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from bench.core.journal import Journal
from bench.quality.candidates import freeze
from bench.quality.phase import PhaseSpec, run_phase
from bench.quality.summary import latency_table
from tests.quality.fakes import make_inputs
from tests.support.fakes import FakeReranker

SPEC = PhaseSpec(stages=("s1",), models=("point",), depths=(100,))


def test_resumed_process_warms_up_anew(tmp_path: Path) -> None:
    sources, queries, texts = make_inputs(tmp_path / "in")
    cands = freeze(tmp_path / "study", sources)
    n_queries = len(cands.qids("s1"))
    calls = {"n": 0}

    def after_4(fake: FakeReranker, q: str, p: Any) -> None:  # Ctrl-C at the 5th call of all models
        calls["n"] += 1
        if calls["n"] > 4:
            raise KeyboardInterrupt

    def interrupted_after_4(model: str) -> FakeReranker:
        return FakeReranker(model, on_call=after_4)

    path = tmp_path / "study" / "journal.jsonl"
    with Journal(path) as j, pytest.raises(KeyboardInterrupt):
        run_phase(j, cands, queries, texts, interrupted_after_4, SPEC, stream=io.StringIO())
    with Journal(path) as j:  # the resume: a new process (a new run_phase) with a freshly loaded model
        run_phase(j, cands, queries, texts, FakeReranker, SPEC, stream=io.StringIO())
        records = j.records
    assert len(records) == n_queries == 6
    assert [r["process_call"] for r in records] == [0, 1, 2, 3, 0, 1]
    assert len({r["process"] for r in records}) == 2
    (row,) = latency_table(records, warmup=2)
    # first process: calls 0 and 1 are warm-up, 2 and 3 timed; resumed process: 0 and 1 are warm-up again.
    # Counting by journal position (the old rule) would have timed the resumed process's cold calls.
    assert row["warmup_excluded"] == 4 and row["n"] == 2 and row["processes"] == 2
    kept = [r["latency_ns"] for r in records[2:4]]
    assert row["p50_ms"] == pytest.approx(sum(kept) / 2 / 1e6)


def test_tiny_group_is_timed_whole() -> None:
    recs = [
        {
            "stage": "s",
            "model": "m",
            "depth": 20,
            "latency_ns": 1_000_000 * (i + 1),
            "process": "p",
            "process_call": i,
        }
        for i in range(3)
    ]
    (row,) = latency_table(recs, warmup=20)
    assert row["warmup_excluded"] == 0 and row["n"] == 3 and row["p50_ms"] == 2.0
