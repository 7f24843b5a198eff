"""The rehearsal's int8 timings as latency blocks: written in the latency format, read back by
``analysis.latency``, priced by the costs section as "CPU int8", accuracy checked against the fp32 run."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.costs.latency import machine_of
from analysis.inputs.trec import write_run
from analysis.latency import block_summary, read_blocks
from bench.rehearse import int8 as step
from bench.rehearse.int8_blocks import target_of, write_int8_blocks
from tests.int8.test_rehearsal_step import fake


def _fixture(tmp_path: Path) -> tuple[dict, dict, dict, dict, dict, Path, Path]:
    queries = {f"q{i:02d}": "x" * i for i in range(6)}
    candidates = {q: [f"{q}-{d}" for d in range(120)] for q in queries}
    texts = {d: d for ds in candidates.values() for d in ds}
    qrels = {q: {f"{q}-{d}": 1 for d in range(0, 120, 9)} for q in queries}
    first = tmp_path / "runs" / "first-stage" / "vector-71k.trec"
    write_run(
        first,
        {q: [(d, 200.0 - i) for i, d in enumerate(c[:100])] for q, c in candidates.items()},
        tag="first-stage/vector-71k",
    )
    fp32_run = {
        q: sorted(((d, float(d.split("-")[1])) for d in candidates[q][:100]), key=lambda t: -t[1])
        for q in queries
    }
    ref = tmp_path / "runs" / "vector-71k" / "minilm-standin@100.trec"
    write_run(ref, fp32_run, tag="vector-71k/minilm-standin@100")
    return queries, candidates, texts, qrels, fp32_run, first, ref


@pytest.mark.parametrize(("noise", "status"), [(0.0, "passed"), (40.0, "mismatch")])
def test_blocks_in_the_latency_format(tmp_path: Path, noise: float, status: str) -> None:
    queries, candidates, texts, qrels, fp32_run, first, ref = _fixture(tmp_path)
    sampled = ["q04", "q01", "q03"]
    fp32_ns = {k: {q: 1_000_000 * (i + 1) * k for i, q in enumerate(sampled)} for k in (20, 100)}
    int8 = fake("minilm-standin-int8", noise)
    rec = step.compare_with_latency_step(
        int8, {"fp32_ns": fp32_ns, "query_ids": sampled}, fp32_run, queries, candidates, texts, qrels
    )
    paths = write_int8_blocks(tmp_path, rec.pop("_timed"), int8.meta.to_dict(), ref, first)
    folder = "latency/not-published/cpu/rehearsal/minilm-standin-int8"
    assert paths == [f"{folder}/k{k}-pass1.json" for k in (20, 100)]
    blocks = sorted(read_blocks(tmp_path / "latency", published=False), key=lambda b: b.k)
    assert [(b.kind, b.target, b.k, b.published) for b in blocks] == [
        ("cpu", "minilm-standin-int8", 20, False),
        ("cpu", "minilm-standin-int8", 100, False),
    ]
    for b in blocks:
        assert machine_of(b) == ("CPU int8", "minilm-standin")  # the decision figure's CPU int8 panel
        assert list(b.query_ids) == sampled and len(b.warmup_query_ids) == 5 and b.query_seed == 20261009
        # the block's samples are the very int8 times of int8.json
        assert [s.ns for s in b.samples] == rec["latency_ns"]["int8"][str(b.k)]
        assert block_summary(b).latency.p50_ms == pytest.approx(rec["latency"]["int8"][str(b.k)]["p50_ms"])
        assert b.accuracy.status == status and b.accuracy.reference == str(ref)
        assert "rehearsal stand-in" in b.marks
        assert any(m.startswith("accuracy mismatch") for m in b.marks) == (status == "mismatch")
        assert b.candidates is not None and b.candidates["stage"] == "vector-71k"
        # the busy-host rule over the timed calls themselves (no window spent before or after them)
        assert b.host_before["foreign"] is None and b.host_after["foreign"]["over"] == "the block"
        assert b.host_after["foreign"]["window_s"] > 0 and "cpu_counters" in b.host_before
    assert "_timed" not in rec


def test_target_names_end_in_int8() -> None:
    assert target_of("minilm-standin-int8") == "minilm-standin-int8"
    assert target_of("minilm-standin") == "minilm-standin-int8"
