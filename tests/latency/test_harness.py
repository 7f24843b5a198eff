"""run_block: atomic blocks, resume without re-measuring, busy-host rule, accuracy and chunk marks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.latency import block_summary, read_block
from bench.core.errors import BenchError
from bench.latency.callers import RerankerCaller
from bench.latency.harness import run_block
from bench.latency.timer import WallTimer
from tests.latency.fakes import calls, env, host_sequence, ordered_fake, reference_for, spec
from tests.support.fakes import FakeReranker


def test_block_is_written_whole_and_read_back(tmp_path: Path) -> None:
    fake = ordered_fake()
    s = spec()
    _, measured = run_block(s, RerankerCaller(fake, WallTimer()), env(tmp_path))
    assert measured and len(fake.calls) == 2 + 6  # warm-up calls are made, then every query
    path = tmp_path / "not-published/cpu/testbox/fake/k5-pass1.json"
    back = read_block(path)
    assert back.query_ids == tuple(c.query_id for c in s.measured)
    assert back.warmup_query_ids == ("q000", "q001")
    assert [x.input_tokens for x in back.samples] == [25] * 6
    assert all(x.ns is not None and x.ns > 0 for x in back.samples)
    assert back.chunk_size == 5 and back.marks == ("accuracy not checked: no quality run of this model",)
    assert block_summary(back).latency.n == 6
    assert back.reranker is not None and back.reranker["id"] == "fake"


def test_finished_block_is_never_measured_again(tmp_path: Path) -> None:
    run_block(spec(), RerankerCaller(ordered_fake(), WallTimer()), env(tmp_path))
    path = tmp_path / spec().relpath()
    before = path.read_bytes()
    again = ordered_fake()
    _, measured = run_block(spec(), RerankerCaller(again, WallTimer()), env(tmp_path))
    assert not measured and len(again.calls) == 0 and path.read_bytes() == before


def test_interrupt_discards_the_block_and_rerun_starts_from_warmup(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        run_block(spec(), RerankerCaller(ordered_fake(fail_at=5), WallTimer()), env(tmp_path))
    assert not list(tmp_path.rglob("*.json"))
    fresh = ordered_fake()
    block, measured = run_block(spec(), RerankerCaller(fresh, WallTimer()), env(tmp_path))
    assert measured and len(fresh.calls) == 8 and len(block.samples) == 6


def test_busy_host_is_refused_or_marked(tmp_path: Path) -> None:
    """Judged over the block itself (the counters of its two snapshots): a busy block is not written."""
    refused = r"host busy during fake k=5 pass 1: other processes used 4.50 cores over 1.0 s > 4 .*allow-busy"
    with pytest.raises(BenchError, match=refused + r".*This block was not written"):
        run_block(spec(), RerankerCaller(ordered_fake(), WallTimer()), env(tmp_path, host=host_sequence(4.5)))
    assert not list(tmp_path.rglob("*.json"))
    block, _ = run_block(
        spec(allow_busy=True),
        RerankerCaller(ordered_fake(), WallTimer()),
        env(tmp_path, host=host_sequence(4.5)),
    )
    assert block.allow_busy and any("--allow-busy" in m and "during" in m for m in block.marks)
    assert block.host_after["foreign"]["over"] == "the block" and block.host_after["foreign"]["cores"] == 4.5
    # a snapshot without readable counters is never taken as quiet
    with pytest.raises(BenchError, match="host load not judged during"):
        unreadable = {"load1": 0.0, "cpu_count": 8, "cpu_counters": {"error": "x"}}
        caller = RerankerCaller(ordered_fake(), WallTimer())
        run_block(spec(), caller, env(tmp_path / "u", host=lambda: unreadable))


def test_accuracy_against_quality_scores(tmp_path: Path) -> None:
    c = calls(6)
    good, _ = run_block(
        spec(),
        RerankerCaller(ordered_fake(), WallTimer()),
        env(tmp_path / "a", reference=reference_for(c), reference_label="runs/x@100.trec"),
    )
    assert good.accuracy.status == "passed" and good.accuracy.min_spearman == 1.0 and not good.marks
    bad, _ = run_block(
        spec(),
        RerankerCaller(ordered_fake(), WallTimer()),
        env(tmp_path / "b", reference=reference_for(c, reverse=True), reference_label="r"),
    )
    assert bad.accuracy.status == "mismatch" and len(bad.accuracy.failed_queries) == 6
    assert bad.accuracy.min_spearman == -1.0 and bad.marks[0].startswith("accuracy mismatch")


def halving(fake: FakeReranker, query: str, passages: object) -> None:
    fake.chunk = 2 if len(fake.calls) >= 5 else None  # OOM-style halving from the 5th call on


def test_chunk_size_change_inside_a_block_marks_it(tmp_path: Path) -> None:
    block, _ = run_block(spec(), RerankerCaller(ordered_fake(on_call=halving), WallTimer()), env(tmp_path))
    assert block.chunk_size == 5
    assert any(m.startswith("chunk size changed inside the block: warm-up ended at 5") for m in block.marks)
    assert json.loads((tmp_path / spec().relpath()).read_text())["summary"]["chunk_sizes"] == [2, 5]
