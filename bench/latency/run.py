"""Measure local rerankers block by block (plan section "Latency"), for ``bench latency gpu|cpu`` and the
rehearsal's latency step alike: one model loaded once, then for every pass and every k a block
(``bench.latency.harness.run_block``) with its own warm-up.

Inputs are plain mappings (queries, candidates in first-stage order, passage texts), so the study and the
rehearsal run the same code on different data.

One chunk size per model: before its first block, an adapter that chunks its forward passes
scores the model's longest call (the call at the largest k whose longest passage has the most characters: the
batch is padded to it) untimed, halving on out of memory until it fits (``settle_chunk_size``); that size is
used for every pass and k, recorded in each block's manifest (``chunk_settled``) and taken from there after a
resume, so a resumed run does not start unchunked again.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from analysis.latency import read_block
from bench.core.errors import BenchError
from bench.core.plan import RERANKERS
from bench.latency.accuracy import read_reference, reference_path
from bench.latency.callers import RerankerCaller
from bench.latency.harness import BlockSpec, Call, Environment, run_block
from bench.latency.order import fixed_sample, seeded_order, warmup_ids
from bench.latency.presets import INT8_ID, ModelRule, Preset
from bench.latency.telemetry import Sampler
from bench.latency.timer import CallTimer
from bench.rerankers.protocol import Reranker


@dataclass(frozen=True)
class Inputs:
    queries: Mapping[str, str]  # qid -> query text
    candidates: Mapping[str, tuple[str, ...]]  # qid -> docids in first-stage order (at least the largest k)
    texts: Mapping[str, str]  # docid -> passage text
    source: Mapping[str, Any]  # {"stage", "run_file", "sha256"}


@dataclass(frozen=True)
class Settings:
    preset: Preset
    machine: str  # in words ("Hetzner CCX33, FSN1")
    session: str  # folder label ("ccx33-fsn1")
    out_root: Path  # results/latency (or the rehearsal's latency folder)
    runs_dir: Path | None  # quality runs for the accuracy check
    stage: str
    depths: tuple[int, ...] | None = None  # a subset of the preset's; None: all
    allow_busy: bool = False
    unrated: Mapping[str, str] = field(default_factory=dict)  # model -> reason (only with --allow-unrated)
    sample: int | None = None  # overrides the preset's sample size (rehearsal only)
    warmup: int | None = None  # overrides the preset's warm-up count (rehearsal only)


def query_set(preset: Preset, qids: Sequence[str], sample: int | None = None) -> tuple[str, ...]:
    """The queries a preset measures: every query, or the fixed seeded sample."""
    n = sample if sample is not None else preset.sample
    if n is None:
        return tuple(sorted(qids))
    return fixed_sample(qids, n, preset.sample_seed if preset.sample_seed is not None else preset.order_seed)


def block_calls(inputs: Inputs, ids: Sequence[str], k: int) -> tuple[Call, ...]:
    out = []
    for qid in ids:
        docids = tuple(inputs.candidates.get(qid, ())[:k])
        missing = [d for d in docids if d not in inputs.texts]
        if missing:
            raise BenchError(f"passage {missing[0]!r} (query {qid}) has no text in the corpus read")
        out.append(Call(qid, inputs.queries[qid], docids, tuple(inputs.texts[d] for d in docids)))
    return tuple(out)


def _plan_model(model: str) -> bool:
    return model in RERANKERS or model == INT8_ID


def specs_for(model: str, settings: Settings, inputs: Inputs, pool: Sequence[str]) -> list[BlockSpec]:
    preset = settings.preset
    rule: ModelRule = preset.rule(model)
    depths = tuple(k for k in rule.depths if settings.depths is None or k in settings.depths)
    order = seeded_order(pool, preset.order_seed)
    measured_ids = order[: rule.queries] if rule.queries is not None else order
    warm = settings.warmup if settings.warmup is not None else rule.warmup
    warm_ids = warmup_ids(pool, warm)
    unrated = settings.unrated.get(model)
    marks = (
        (f"not publishable: {model} has no passed adapter check ({unrated}); --allow-unrated",)
        if unrated
        else ()
    )
    out = []
    for pass_ in range(1, preset.passes + 1):
        for k in depths:
            out.append(
                BlockSpec(
                    kind=preset.kind,
                    machine=settings.machine,
                    session=settings.session,
                    target=model,
                    k=k,
                    pass_=pass_,
                    published=preset.published and not unrated and _plan_model(model),
                    warmup=block_calls(inputs, warm_ids, k),
                    measured=block_calls(inputs, measured_ids, k),
                    query_seed=preset.order_seed,
                    allow_busy=settings.allow_busy,
                    allow_unrated=bool(unrated),
                    marks=marks,
                    candidates=dict(inputs.source),
                )
            )
    return out


def finished_blocks(model: str, settings: Settings, inputs: Inputs) -> list[Any] | None:
    """Every block of ``model`` read back if all are finished already (no need to load it), else None."""
    pool = query_set(settings.preset, list(inputs.queries), settings.sample)
    paths = [settings.out_root / s.relpath() for s in specs_for(model, settings, inputs, pool)]
    if not all(p.is_file() for p in paths):
        return None
    return [read_block(p) for p in paths]


SETTLED_ON = (
    "settled before the first block, untimed, on the call at the largest k whose longest passage has the "
    "most characters"
)


def _recorded_chunk(settings: Settings, specs: Sequence[BlockSpec]) -> dict[str, Any] | None:
    """The chunk size settled for this model by an earlier run, from any of its finished blocks."""
    for spec in specs:
        path = settings.out_root / spec.relpath()
        if path.is_file():
            settled = (read_block(path).manifest or {}).get("chunk_settled")
            if isinstance(settled, dict) and isinstance(settled.get("size"), int):
                return dict(settled)
    return None


def settle_chunk(reranker: Reranker, settings: Settings, specs: Sequence[BlockSpec]) -> dict[str, Any] | None:
    """Fix the adapter's chunk size for all of the model's blocks (None: the adapter does not chunk)."""
    settle = getattr(reranker, "settle_chunk_size", None)
    fix = getattr(reranker, "fix_chunk_size", None)
    if not callable(settle) or not callable(fix) or not specs:
        return None
    recorded = _recorded_chunk(settings, specs)
    if recorded is not None:
        fix(recorded["size"])
        return {**recorded, "reused": "from a finished block of this model (a resumed run)"}
    k_max = max(s.k for s in specs)
    calls = [c for s in specs if s.k == k_max for c in (*s.warmup, *s.measured)]

    def size(c: Call) -> tuple[int, int]:
        return max(map(len, c.passages), default=0), sum(len(p) for p in c.passages)

    longest = max(calls, key=size)
    settled = settle(longest.query, list(longest.passages))
    return {"size": int(settled), "k": k_max, "query_id": longest.query_id, "how": SETTLED_ON}


def measure_model(
    model: str,
    reranker: Reranker,
    timer: CallTimer,
    settings: Settings,
    inputs: Inputs,
    *,
    manifest: Mapping[str, Any],
    sampler: Callable[[], Sampler] | None,
    stream: TextIO | None = None,
    host: Callable[[], dict[str, Any]] | None = None,
) -> list[tuple[Any, bool]]:
    """Every block of one loaded model; ``[(block, measured_now)]`` in measuring order."""
    stream = stream if stream is not None else sys.stderr
    pool = query_set(settings.preset, list(inputs.queries), settings.sample)
    specs = specs_for(model, settings, inputs, pool)
    settled = settle_chunk(reranker, settings, specs)
    if settled is not None:
        manifest = {**manifest, "chunk_settled": settled}
        print(f"latency: {model}: chunk size {settled['size']} for every block", file=stream)
    caller = RerankerCaller(reranker, timer)
    results = []
    for spec in specs:
        ref_path = (
            reference_path(settings.runs_dir, settings.stage, model, spec.k) if settings.runs_dir else None
        )
        env = Environment(
            out_root=settings.out_root,
            manifest=manifest,
            reference=read_reference(ref_path) if ref_path is not None else None,
            reference_label=str(ref_path) if ref_path is not None else None,
            reference_missing=f"no quality run of {model} on {settings.stage} under {settings.runs_dir}",
            sampler=sampler,
            stream=stream,
            **({"host": host} if host is not None else {}),
        )
        block, measured = run_block(spec, caller, env)
        verb = "measured" if measured else "already measured, kept"
        print(f"latency: {model} k={spec.k} pass {spec.pass_}: {verb} ({spec.relpath()})", file=stream)
        results.append((block, measured))
    return results
