"""The rehearsal's int8 timings as latency blocks: ``<rehearsal>/latency/not-published/cpu/
rehearsal/minilm-standin-int8/k<k>-pass1.json``, the format of ``analysis.latency`` (``latency-block/1``).

The int8 step times the int8 stand-in with ``bench.quality.timing.timed_score`` (texts in, scores out, the
adapter call only) on the latency step's sampled queries after its warm-up count. Written as blocks, those
timings are read like any other: the report's latency section lists them, and the costs section prices them
as the "CPU int8" machine (target ``<model>-int8``, ``analysis.costs.latency.machine_of``), so the decision
figure's CPU int8 panel shows the int8 stand-in. The accuracy field is the latency format's own check
(``bench.latency.accuracy.check_accuracy``): the scores of the timed calls against the fp32 stand-in's quality
run, Spearman >= 0.99 per query; on a CPU where int8 misses that, the block says so in its marks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.core.atomic import write_bytes_atomic
from analysis.latency import Block, Sample
from bench.core.plan import SEED
from bench.integrity import hashing
from bench.latency.accuracy import accuracy_mark, check_accuracy, read_reference
from bench.latency.host import busy_mark, foreign_over
from bench.records import provenance
from bench.rerankers.protocol import ScoreResult

TARGET_SUFFIX = "-int8"
MACHINE = "rehearsal machine (shared, not published)"  # as the latency step's fp32 blocks
SESSION = "rehearsal"
TIMER = "time.perf_counter_ns around the adapter call (bench.quality.timing.timed_score), rehearsal int8 step"


@dataclass(frozen=True)
class TimedCall:
    query_id: str
    ns: int
    docids: tuple[str, ...]
    result: ScoreResult


@dataclass(frozen=True)
class TimedDepth:
    """One k of the int8 step: warm-up query ids, the timed calls in order, host state around them."""

    k: int
    warmup: tuple[str, ...]
    calls: tuple[TimedCall, ...]
    host_before: Mapping[str, Any]
    host_after: Mapping[str, Any]
    started_utc: str
    finished_utc: str


def target_of(model_id: str) -> str:
    """The block's target: the int8 adapter's id, which ends in ``-int8`` (the costs section's CPU int8)."""
    return model_id if model_id.endswith(TARGET_SUFFIX) else model_id + TARGET_SUFFIX


def int8_block(
    t: TimedDepth,
    reranker: Mapping[str, Any],
    reference: Path,
    candidates: Mapping[str, Any],
    manifest: Mapping[str, Any],
) -> Block:
    """The block of one k; ``reference``: the fp32 stand-in's quality run (the accuracy check's reference)."""
    observed = {c.query_id: (c.docids, c.result.scores) for c in t.calls}
    acc = check_accuracy(observed, read_reference(reference), label=str(reference))
    marks = ["rehearsal stand-in", "not publishable: the int8 stand-in has no adapter check (a stand-in)"]
    what = f"{reranker['id']} k={t.k} (rehearsal int8 step)"
    after = {**t.host_after, "foreign": foreign_over(t.host_before, t.host_after)}  # over the timed calls
    busy = busy_mark(after, allow_busy=True, what=what, when="during")
    for mark in (busy, accuracy_mark(acc)):
        if mark:
            marks.append(mark)
    samples = tuple(
        Sample(
            query_id=c.query_id,
            k=t.k,
            pass_=1,
            ns=int(c.ns),
            chunk_size=int(c.result.record["chunk_size"]),
            n_passages=int(c.result.record["n"]),
            input_tokens=c.result.record.get("input_tokens"),
            max_input_tokens=c.result.record["max_input_tokens"],
        )
        for c in t.calls
    )
    chunks = sorted({s.chunk_size for s in samples if s.chunk_size is not None})
    return Block(
        kind="cpu",
        machine=MACHINE,
        session=SESSION,
        target=target_of(str(reranker["id"])),
        target_type="reranker",
        k=t.k,
        pass_=1,
        published=False,
        marks=tuple(marks),
        allow_busy=True,
        allow_unrated=True,
        started_utc=t.started_utc,
        finished_utc=t.finished_utc,
        query_seed=SEED,
        query_ids=tuple(c.query_id for c in t.calls),
        warmup_query_ids=t.warmup,
        chunk_size=chunks[0] if len(chunks) == 1 else None,
        timer=TIMER,
        host_before=dict(t.host_before),
        host_after=after,
        accuracy=acc,
        samples=samples,
        reranker=dict(reranker),
        manifest=dict(manifest),
        candidates=dict(candidates),
    )


def write_int8_blocks(
    directory: Path,
    timed: Mapping[int, TimedDepth],
    reranker: Mapping[str, Any],
    reference: Path,
    first_stage_run: Path,
) -> list[str]:
    """Write one block per k under ``<directory>/latency`` (atomically, replacing a block of an earlier
    attempt of this step); returns their paths relative to ``directory``."""
    manifest = provenance.collect_manifest(kind="rehearsal", device="cpu", dtype="int8", root=None)
    candidates = {
        "stage": first_stage_run.stem,
        "run_file": str(first_stage_run),
        "sha256": hashing.sha256_file(first_stage_run),
    }
    out: list[str] = []
    root = directory / "latency"
    for k in sorted(timed):
        block = int8_block(timed[k], reranker, reference, candidates, manifest)
        path = root / block.relpath()
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, block.to_json_bytes())
        out.append(path.relative_to(directory).as_posix())
    return out
