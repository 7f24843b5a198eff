"""One latency block, measured atomically (plan section "Latency").

A block is one (machine, model or stage, k, pass). ``run_block``:

1. returns the finished block if its file exists (finished blocks are never re-measured or spliced);
2. records the host state (a snapshot, no waiting: ``bench.latency.host.snapshot``);
3. starts the telemetry sampler beside the calls (``bench.latency.telemetry``) and resets torch's peak
   GPU-memory counters (the block's peak allocated and reserved bytes go into ``host_after["device_memory"]``,
   null with the reason off CUDA); each measured call's start goes into the telemetry as
   ``call_offsets_s`` on the sampler's clock;
4. makes the warm-up calls (discarded; the plan's 20 on the first 20 queries); the chunk size was settled
   before the model's first block (``bench.latency.run.settle_chunk``), and the block records the size the
   warm-up ended with (a measured call that uses another size marks the block);
5. times every measured call in the seeded order through a ``Caller`` (the timer wraps the adapter's
   public call and nothing else);
6. stops the sampler, records the host state again and applies the busy-host rule to the block itself
   (other processes' CPU from the two snapshots' counters, ``bench.latency.host.foreign_over``: a busy
   block is refused and not written, unless ``--allow-busy`` marks it), compares the scores with the quality
   run (``bench.latency.accuracy``) and writes the block file atomically (``analysis.core.atomic``).

Ctrl-C, a crash or a busy host anywhere before the write leaves no file: the rerun measures the block again
from its warm-up. Nothing of an unfinished block is kept. (The run as a whole is judged once before its
first block, over a short window: ``bench.latency.host.judge_before_run``.)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

import numpy as np

from analysis.core.atomic import write_bytes_atomic
from analysis.latency import Accuracy, Block, BlockPath, Sample, read_block
from bench.core import clock
from bench.core.errors import BenchError
from bench.core.interrupt import raise_if_interrupted
from bench.core.memory import peak_memory, reset_peak_memory
from bench.core.progress import Progress
from bench.latency.accuracy import accuracy_mark, check_accuracy
from bench.latency.host import busy_mark, foreign_over, snapshot
from bench.latency.telemetry import Sampler


@dataclass(frozen=True)
class Call:
    """One unit of the plan: a query with its k candidates (first-stage order), texts in."""

    query_id: str
    query: str
    docids: tuple[str, ...]
    passages: tuple[str, ...]


@dataclass(frozen=True)
class Observation:
    sample: Sample
    scores: np.ndarray | None  # None: the call failed (API), no scores


class Caller(Protocol):
    """Times one call of a target (reranker, API) and turns what it returned into a ``Sample``."""

    timer: str  # what the clock covers, in words (stored in the block)
    reranker: Mapping[str, Any] | None  # the adapter's meta, stored in the block

    def __call__(self, call: Call, *, k: int, pass_: int) -> Observation: ...


@dataclass(frozen=True)
class BlockSpec(BlockPath):
    kind: str
    machine: str
    session: str
    target: str
    k: int
    pass_: int
    published: bool
    warmup: tuple[Call, ...]
    measured: tuple[Call, ...]
    query_seed: int | None
    allow_busy: bool = False
    allow_unrated: bool = False
    marks: tuple[str, ...] = ()  # known before measuring (e.g. the adapter check was not passed)
    target_type: str = "reranker"
    api: Mapping[str, Any] | None = None
    candidates: Mapping[str, Any] | None = None


@dataclass
class Environment:
    """What ``run_block`` needs besides the spec: where to write, the manifest, the probes."""

    out_root: Path
    manifest: Mapping[str, Any]
    reference: Mapping[str, Mapping[str, float]] | None = None
    reference_label: str | None = None
    reference_missing: str = "no quality run of this model"
    sampler: Callable[[], Sampler] | None = None
    host: Callable[[], dict[str, Any]] = snapshot  # no window: the block is judged over itself
    stream: TextIO = field(default_factory=lambda: sys.stderr)


def _chunk_mark(spec: BlockSpec, chunk: int | None, samples: Sequence[Sample]) -> str | None:
    if chunk is None:
        return None
    changed = [
        s for s in samples if s.chunk_size is not None and s.chunk_size != min(chunk, s.n_passages or chunk)
    ]
    if not changed:
        return None
    return (
        f"chunk size changed inside the block: warm-up ended at {chunk}, {len(changed)} call(s) used "
        f"{sorted({s.chunk_size or 0 for s in changed})}"
    )


@dataclass
class Measured:
    """What the calls of one block gave (``_measure``)."""

    samples: list[Sample]
    observed: dict[str, tuple[Sequence[str], np.ndarray]]
    chunk: int | None
    telemetry: dict[str, Any] | None
    memory: dict[str, Any] = field(default_factory=dict)  # peak GPU memory of the block (bench.core.memory)


def _measure(spec: BlockSpec, caller: Caller, env: Environment, what: str) -> Measured:
    """The warm-up calls (discarded; they settle the chunk size), then every measured call, with the
    telemetry sampler running beside them."""
    sampler = env.sampler() if env.sampler is not None else None
    reset_peak_memory()
    if sampler is not None:
        sampler.start()
    starts: list[int] = []
    try:
        chunk: int | None = None
        for call in spec.warmup:
            obs = caller(call, k=spec.k, pass_=spec.pass_)
            if obs.sample.chunk_size is not None and obs.sample.n_passages >= spec.k:
                chunk = obs.sample.chunk_size
        samples: list[Sample] = []
        observed: dict[str, tuple[Sequence[str], np.ndarray]] = {}
        with Progress(f"latency {what}", len(spec.measured), "calls", stream=env.stream) as progress:
            for call in spec.measured:
                starts.append(time.perf_counter_ns())
                obs = caller(call, k=spec.k, pass_=spec.pass_)
                samples.append(obs.sample)
                if obs.scores is not None:
                    observed[call.query_id] = (call.docids, obs.scores)
                progress.advance()
    finally:
        telemetry = sampler.stop() if sampler is not None else None
    if telemetry is not None and sampler is not None:
        telemetry["call_offsets_s"] = [(t - sampler.start_ns) / 1e9 for t in starts]
    if chunk is None:
        sizes = [s.chunk_size for s in samples if s.chunk_size is not None and s.n_passages >= spec.k]
        chunk = sizes[0] if sizes else None
    return Measured(samples, observed, chunk, telemetry, peak_memory())


def _busy_over_block(
    spec: BlockSpec, before: Mapping[str, Any], after: dict[str, Any], what: str
) -> str | None:
    """The busy-host rule over the block itself (``after["foreign"]`` is set here): None, a mark
    (``--allow-busy``), or BenchError saying that the block was not written."""
    after["foreign"] = foreign_over(before, after)
    try:
        return busy_mark(after, allow_busy=spec.allow_busy, what=what, when="during")
    except BenchError as exc:
        raise BenchError(
            f"{exc.message} This block was not written (the rerun measures it again; finished blocks "
            "are kept)."
        ) from None


def run_block(spec: BlockSpec, caller: Caller, env: Environment) -> tuple[Block, bool]:
    """Measure (or find) one block; ``(block, measured_now)``."""
    path = env.out_root / spec.relpath()
    if path.is_file():
        return read_block(path), False
    what = f"{spec.target} k={spec.k} pass {spec.pass_}"
    before, started = env.host(), clock.utc_iso("milliseconds")
    got = _measure(spec, caller, env, what)
    after = dict(env.host())
    after["device_memory"] = got.memory
    accuracy: Accuracy = check_accuracy(
        got.observed, env.reference, label=env.reference_label, why_missing=env.reference_missing
    )
    busy = _busy_over_block(spec, before, after, what)
    marks = [
        *spec.marks,
        *(m for m in (busy, accuracy_mark(accuracy), _chunk_mark(spec, got.chunk, got.samples)) if m),
    ]
    block = Block(
        kind=spec.kind,
        machine=spec.machine,
        session=spec.session,
        target=spec.target,
        target_type=spec.target_type,
        k=spec.k,
        pass_=spec.pass_,
        published=spec.published,
        marks=tuple(marks),
        allow_busy=spec.allow_busy,
        allow_unrated=spec.allow_unrated,
        started_utc=started,
        finished_utc=clock.utc_iso("milliseconds"),
        query_seed=spec.query_seed,
        query_ids=tuple(c.query_id for c in spec.measured),
        warmup_query_ids=tuple(c.query_id for c in spec.warmup),
        chunk_size=got.chunk,
        timer=caller.timer,
        host_before=before,
        host_after=after,
        accuracy=accuracy,
        samples=tuple(got.samples),
        telemetry=got.telemetry,
        api=spec.api,
        reranker=caller.reranker,
        manifest=env.manifest,
        candidates=spec.candidates,
    )
    raise_if_interrupted()  # an interrupt a library swallowed mid-block: the block is discarded, not written
    write_bytes_atomic(path, block.to_json_bytes())
    return block, True
