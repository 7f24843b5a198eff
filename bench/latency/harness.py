"""One latency block, measured atomically (plan section "Latency").

A block is one (machine, model or stage, k, pass). ``run_block``:

1. returns the finished block if its file exists (finished blocks are never re-measured or spliced);
2. records the host state and applies the busy-host rule (``bench.latency.host``);
3. starts the telemetry sampler beside the calls (``bench.latency.telemetry``);
4. makes the warm-up calls (discarded; the plan's 20 on the first 20 queries), which also settle the chunk
   size (an adapter halves it on out-of-memory; the block records the size the warm-up ended with, and a
   measured call that uses another size marks the block);
5. times every measured call in the seeded order through a ``Caller`` (the timer wraps the adapter's
   public call and nothing else);
6. stops the sampler, records the host state again, compares the scores with the quality run
   (``bench.latency.accuracy``) and writes the block file atomically (``analysis.atomic``).

Ctrl-C or a crash anywhere before the write leaves no file: the rerun measures the block again from its
warm-up. Nothing of an unfinished block is kept.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

import numpy as np

from analysis.atomic import write_bytes_atomic
from analysis.latency import Accuracy, Block, Sample, read_block
from bench import clock
from bench.interrupt import raise_if_interrupted
from bench.latency.accuracy import accuracy_mark, check_accuracy
from bench.latency.host import busy_mark, host_state
from bench.latency.telemetry import Sampler
from bench.progress import Progress


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
class BlockSpec:
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

    def relpath(self) -> Path:
        from analysis.latency import block_relpath

        return block_relpath(
            published=self.published,
            kind=self.kind,
            session=self.session,
            target=self.target,
            k=self.k,
            pass_=self.pass_,
        )


@dataclass
class Environment:
    """What ``run_block`` needs besides the spec: where to write, the manifest, the probes."""

    out_root: Path
    manifest: Mapping[str, Any]
    reference: Mapping[str, Mapping[str, float]] | None = None
    reference_label: str | None = None
    reference_missing: str = "no quality run of this model"
    sampler: Callable[[], Sampler] | None = None
    host: Callable[[], dict[str, Any]] = host_state
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


def run_block(spec: BlockSpec, caller: Caller, env: Environment) -> tuple[Block, bool]:
    """Measure (or find) one block; ``(block, measured_now)``."""
    path = env.out_root / spec.relpath()
    if path.is_file():
        return read_block(path), False
    what = f"{spec.target} k={spec.k} pass {spec.pass_}"
    before = env.host()
    marks = list(spec.marks)
    busy = busy_mark(before, allow_busy=spec.allow_busy, what=what)
    if busy:
        marks.append(busy)
    started = clock.utc_iso("milliseconds")
    sampler = env.sampler() if env.sampler is not None else None
    if sampler is not None:
        sampler.start()
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
                obs = caller(call, k=spec.k, pass_=spec.pass_)
                samples.append(obs.sample)
                if obs.scores is not None:
                    observed[call.query_id] = (call.docids, obs.scores)
                progress.advance()
    finally:
        telemetry = sampler.stop() if sampler is not None else None
    after = env.host()
    if chunk is None:
        sizes = [s.chunk_size for s in samples if s.chunk_size is not None and s.n_passages >= spec.k]
        chunk = sizes[0] if sizes else None
    accuracy: Accuracy = check_accuracy(
        observed, env.reference, label=env.reference_label, why_missing=env.reference_missing
    )
    for mark in (accuracy_mark(accuracy), _chunk_mark(spec, chunk, samples)):
        if mark:
            marks.append(mark)
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
        chunk_size=chunk,
        timer=caller.timer,
        host_before=before,
        host_after=after,
        accuracy=accuracy,
        samples=tuple(samples),
        telemetry=telemetry,
        api=spec.api,
        reranker=caller.reranker,
        manifest=env.manifest,
        candidates=spec.candidates,
    )
    raise_if_interrupted()  # an interrupt a library swallowed mid-block: the block is discarded, not written
    write_bytes_atomic(path, block.to_json_bytes())
    return block, True
