"""The resumable reranking loop (plan section "Quality"): fills the journal, one record per unit of work.

A unit is (stage, model, called depth, query). For each model, in the order given, the adapter is loaded
once (only if work is left for it), then every stage and every query is scored at the model's called depths
(``bench.quality.depths.call_depths``) with the first k frozen candidates in first-stage order. Units already
in the journal are skipped, so a resume continues exactly where the last fsynced record ends and the order
of records is the same as in an uninterrupted run.

Errors: an adapter call that raises (``Exception``, not Ctrl-C) is recorded as ``status: "error"`` with the
message and no latency and no scores; the query then has no entry in that run file, so it counts as 0 in
every metric ("errors stay in denominators") and the count is reported. An error is final unless its cause
may pass (``is_transient``: an API unavailable through every retry, GPU out of memory): such a record is
marked ``retry`` and a resume tries the query again (the earlier attempt stays in the journal). A model that
cannot run at all (``ModelUnavailable``: a rejected API key, no access, an unknown model name) is stopped at
once and recorded as "not run" (``PhaseOutcome.not_run``); nothing is recorded for the failing call, so a
resume after the fix scores every query. Ctrl-C/SIGTERM during a call writes nothing for that unit; it is
redone on resume. A CUDA error that poisons the process (device-side assert, illegal memory access:
``bench.core.memory.is_sticky_device_error``) is no query's failure either: every later call would fail the
same way and count as 0. It stops the phase (``DeviceUnusable``), nothing is recorded for that unit, and the
session is marked failed with the error and the resume command (``bench.quality.driver``); only out of memory
stays per query.

One model on the card at a time: after a model's last unit its adapter is closed and dropped, collected, the
allocator's cache emptied and the peak counters reset (``bench.core.memory.free_device_memory``) before the
next
model loads; each model's peak allocated and reserved GPU memory goes into ``PhaseOutcome.memory`` (null with
the reason on the CPU).

Record fields: ``stage, model, depth, qid`` (key), ``status``, ``docids`` (the candidates passed, in
order), ``scores`` (fp32 values widened exactly to float64, written with full precision), ``call`` (the
adapter's ``CallRecord``), ``error``, ``latency_ns``, ``utc``, ``process`` and ``process_call`` (which process
made the call, and how many calls of the same stage, model and depth that process had made before: warm-up
is per process). ``TIMING_FIELDS`` are the fields that differ between two otherwise identical runs.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from bench.core import clock
from bench.core.errors import BenchError
from bench.core.interrupt import raise_if_interrupted
from bench.core.journal import Journal
from bench.core.memory import free_device_memory, is_out_of_memory, is_sticky_device_error, peak_memory
from bench.core.progress import Progress
from bench.quality.candidates import Candidates, check_queries
from bench.quality.depths import call_depths
from bench.quality.timing import timed_score
from bench.rerankers.protocol import ModelUnavailable, Reranker

TIMING_FIELDS: tuple[str, ...] = ("latency_ns", "utc", "process", "process_call")
# Warm-up belongs to a process (plan section "Latency": warm-up calls are discarded): every record names the
# process that made it and its place among that process's calls of the same (stage, model, depth), so a
# resumed process's cold first calls are never timed as if warm (``bench.quality.summary.latency_table``).
# The token is made per ``run_phase`` call: each call loads its models anew, so each warms up anew.
RECORD_VERSION = 1

Loader = Callable[[str], Reranker]


class TextsByStage(Protocol):
    """Passage texts per stage (``bench.quality.inputs.StageTexts``: keyed by the stage's corpus)."""

    def for_stage(self, stage: str) -> Mapping[str, str]: ...


Texts = Mapping[str, str] | TextsByStage  # one corpus for every stage (rehearsal, tests), or per stage


def stage_texts(texts: Texts, stage: str) -> Mapping[str, str]:
    return texts.for_stage(stage) if hasattr(texts, "for_stage") else texts  # type: ignore[return-value]


@dataclass(frozen=True)
class PhaseSpec:
    """What to run. ``per_depth``: model ids called separately at every depth (listwise, non-pointwise API);
    ``extra_timing_depths``: also call pointwise models at every depth (the rehearsal times all depths;
    their run files still come from the depth-100 scores)."""

    stages: tuple[str, ...]
    models: tuple[str, ...]
    depths: tuple[int, ...]
    per_depth: frozenset[str] = frozenset()
    extra_timing_depths: bool = False
    queries: frozenset[str] | None = None  # only these query ids (dtype check: 20 queries); None: all

    def called_depths(self, model: str) -> tuple[int, ...]:
        return call_depths(model in self.per_depth or self.extra_timing_depths, self.depths)

    def qids(self, candidates: Candidates, stage: str) -> list[str]:
        """The stage's candidate query ids in frozen order, restricted to ``queries`` if given."""
        return [q for q in candidates.qids(stage) if self.queries is None or q in self.queries]


@dataclass
class PhaseOutcome:
    scored: int = 0
    skipped: int = 0
    errors: int = 0
    retried: int = 0  # units whose earlier attempt had failed for a transient reason
    meta: dict[str, dict[str, Any]] = field(default_factory=dict)  # model -> RerankerMeta.to_dict()
    not_run: dict[str, str] = field(default_factory=dict)  # model -> why it was stopped (ModelUnavailable)
    memory: dict[str, dict[str, Any]] = field(default_factory=dict)  # model -> peak GPU memory of its calls


class DeviceUnusable(BenchError):
    """A sticky CUDA error: the process cannot use the GPU any more; the phase stops, nothing recorded."""

    def __init__(self, key: tuple[str, str, int, str], exc: BaseException) -> None:
        stage, model, depth, qid = key
        self.error = f"{type(exc).__name__}: {exc}"
        super().__init__(
            f"{model} on {stage} @{depth}, query {qid}: {self.error}. A CUDA error of this kind leaves the "
            "process unable to use the GPU, so the phase stopped; nothing was recorded for this query"
        )


def is_transient(exc: BaseException) -> bool:
    """Failures that may pass: an API that stayed unavailable through every retry (429, 5xx, timeouts),
    and running out of GPU memory (another process may have held it). Anything else is final."""
    return getattr(exc, "transient", False) is True or is_out_of_memory(exc)


def score_unit(
    reranker: Reranker,
    key: tuple[str, str, int, str],
    query: str,
    docids: Sequence[str],
    texts: Sequence[str],
) -> dict[str, Any]:
    """One journal record for one adapter call (``KeyboardInterrupt`` propagates, nothing is recorded)."""
    stage, model, depth, qid = key
    rec: dict[str, Any] = {"v": RECORD_VERSION, "stage": stage, "model": model, "depth": depth, "qid": qid}
    rec["docids"] = list(docids)
    try:
        result, latency = timed_score(reranker, query, texts)
        if result.scores.shape[0] != len(docids):
            raise ValueError(f"adapter returned {result.scores.shape[0]} scores for {len(docids)} passages")
    except ModelUnavailable:
        raise  # not this query's failure: the model is stopped and recorded as not run (``run_phase``)
    except Exception as exc:  # recorded, counted, reported: never swallowed
        if is_sticky_device_error(exc):
            raise DeviceUnusable(key, exc) from exc
        rec.update(status="error", scores=None, call=None, error=f"{type(exc).__name__}: {exc}")
        rec.update(latency_ns=None, utc=clock.utc_z("microseconds"))
        if is_transient(exc):
            rec["retry"] = True  # a resume tries this query again (bench.core.journal: superseded, kept)
        return rec
    rec.update(status="ok", scores=[float(s) for s in result.scores.tolist()], call=dict(result.record))
    rec.update(error=None, latency_ns=latency, utc=clock.utc_z("microseconds"))
    return rec


def run_phase(
    journal: Journal,
    candidates: Candidates,
    queries: Mapping[str, str],
    texts: Texts,
    load: Loader,
    spec: PhaseSpec,
    *,
    stream: TextIO | None = None,
    on_loaded: Callable[[str, Reranker], None] | None = None,
) -> PhaseOutcome:
    """Score every missing unit of ``spec`` into ``journal``; returns counts and the loaded models' meta."""
    stream = stream if stream is not None else sys.stderr
    check_queries(candidates, queries, spec.stages, only=spec.queries)
    outcome = PhaseOutcome()
    process = f"{os.getpid()}@{time.time_ns()}"
    for model in spec.models:
        depths = spec.called_depths(model)
        todo = {
            stage: [
                (qid, k)
                for qid in spec.qids(candidates, stage)
                for k in depths
                if _needs_work(journal, (stage, model, k, qid))
            ]
            for stage in spec.stages
        }
        total_left = sum(len(v) for v in todo.values())
        outcome.skipped += sum(len(spec.qids(candidates, s)) * len(depths) for s in spec.stages) - total_left
        if total_left == 0:
            continue
        free_device_memory()  # the previous model is gone (``_release``): an empty card, peaks from zero
        reranker = load(model)
        outcome.meta[model] = reranker.meta.to_dict()
        if on_loaded is not None:
            on_loaded(model, reranker)
        try:
            _score_model(
                journal, candidates, queries, texts, reranker, model, todo, spec, outcome, process, stream
            )
        except ModelUnavailable as exc:
            outcome.not_run[model] = f"{type(exc).__name__}: {exc}"
            print(
                f"not run: {model}: {exc} (no query of this model was recorded for this call; fix the "
                "cause and resume)",
                file=stream,
                flush=True,
            )
        outcome.memory[model] = peak_memory()
        _release(reranker)
        del reranker  # the loop's last reference: the next load starts with this model collected
    free_device_memory()
    return outcome


def _release(reranker: Reranker) -> None:
    """Let the adapter free what it holds (an API client, a model) before its last reference goes."""
    close = getattr(reranker, "close", None)
    if callable(close):
        close()


def _needs_work(journal: Journal, key: tuple[str, str, int, str]) -> bool:
    record = journal.get(key)
    return record is None or record.get("retry") is True


def _score_model(
    journal: Journal,
    candidates: Candidates,
    queries: Mapping[str, str],
    texts: Texts,
    reranker: Reranker,
    model: str,
    todo: Mapping[str, list[tuple[str, int]]],
    spec: PhaseSpec,
    outcome: PhaseOutcome,
    process: str,
    stream: TextIO,
) -> None:
    depths = spec.called_depths(model)
    for stage in spec.stages:
        units = todo[stage]
        if not units:
            continue
        passages = stage_texts(texts, stage)
        made: dict[int, int] = {}  # depth -> calls this process made for (stage, model, depth)
        n_total = len(spec.qids(candidates, stage)) * len(depths)
        with Progress(f"{stage} {model}", n_total, "calls", initial=n_total - len(units), stream=stream) as p:
            for qid, k in units:
                docids = candidates.lists[stage][qid][:k]
                rec = score_unit(
                    reranker, (stage, model, k, qid), queries[qid], docids, [passages[d] for d in docids]
                )
                raise_if_interrupted()  # an interrupt swallowed inside the call: the unit is not recorded
                rec.update(process=process, process_call=made.get(k, 0))
                made[k] = made.get(k, 0) + 1
                if journal.get((stage, model, k, qid)) is not None:
                    outcome.retried += 1
                journal.append(rec)
                outcome.scored += 1
                if rec["status"] == "error":
                    outcome.errors += 1
                    print(
                        f"error: {stage} {model} @{k} query {qid}: {rec['error']}",
                        file=stream,
                        flush=True,
                    )
                p.advance()


def strip_timing(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record without ``TIMING_FIELDS``: what two runs of the same study must agree on."""
    return {k: v for k, v in record.items() if k not in TIMING_FIELDS}
