"""One session of the quality phase over an open study: freeze, score, write runs, record.

Used unchanged by ``bench quality``, ``bench determinism``, ``bench dtype-check`` and ``bench rehearse``:
the rehearsal is this code on other inputs, never a second implementation.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from bench.core.errors import BenchError
from bench.core.hints import bench_command
from bench.core.interrupt import Interrupted, interruptible
from bench.core.journal import Journal
from bench.core.plan import WARMUP_CALLS
from bench.integrity.hashing import sha256_file
from bench.quality.candidates import Candidates, freeze
from bench.quality.phase import DeviceUnusable, Loader, PhaseOutcome, PhaseSpec, Texts, run_phase
from bench.quality.runs import RunFileInfo, pointwise_consistency, write_runs
from bench.quality.study import Study
from bench.quality.summary import latency_table, model_summaries
from bench.records.provenance import attention_implementations, host_info, torch_settings
from bench.rerankers.protocol import Reranker


@dataclass
class SessionResult:
    candidates: Candidates
    outcome: PhaseOutcome
    runs: list[RunFileInfo]
    summaries: dict[str, dict[str, Any]]
    latency: list[dict[str, Any]]
    pointwise_max_abs_diff: dict[str, float]


def execute(
    study: Study,
    *,
    sources: Mapping[str, Path],
    queries: Mapping[str, str],
    texts: Texts | Callable[[Candidates], Texts],
    load: Loader,
    spec: PhaseSpec,
    runs_dir: Path,
    resume_hint: str,
    what: str = "quality phase",
    stream: TextIO | None = None,
) -> SessionResult:
    """Run one session; on Ctrl-C/SIGTERM record ``interrupted`` and raise ``Interrupted`` (exit 130).

    ``texts`` maps docid -> passage text (one corpus), or per stage (``StageTexts``: keyed by the stage's
    corpus), or is a function of the frozen candidates that returns either.
    """
    stream = stream if stream is not None else sys.stderr
    try:
        with interruptible():
            candidates, outcome, runs, records, consistency = _score(
                study, sources, queries, texts, load, spec, runs_dir, stream
            )
    except KeyboardInterrupt:
        study.end("interrupted")
        raise Interrupted(what, resume_hint) from None
    except DeviceUnusable as exc:  # a sticky CUDA error: failed, with the error and how to go on
        study.end("failed", error=exc.error, resume=resume_hint)
        doctor = bench_command("doctor")
        raise BenchError(
            f"{what} failed: {exc.message}. Restart the process (and check the GPU with "
            f"`{doctor}`), then resume with: {resume_hint}"
        ) from None
    except BaseException as exc:
        study.end("failed", error=f"{type(exc).__name__}: {exc}")
        raise
    _record_not_run(study, outcome)
    summaries = model_summaries(records)
    for model, summary in summaries.items():
        study.manifest["models"].setdefault(model, {})["summary"] = summary
    latency = latency_table(records, warmup=WARMUP_CALLS)
    study.end(
        "complete",
        scored=outcome.scored,
        skipped=outcome.skipped,
        errors=outcome.errors,
        retried=outcome.retried,
        not_run=dict(outcome.not_run),
        device_memory=dict(outcome.memory),  # model -> peak GPU memory of this session's calls
        runs=[_run_record(r) for r in runs],
    )
    return SessionResult(candidates, outcome, runs, summaries, latency, consistency)


def _score(
    study: Study,
    sources: Mapping[str, Path],
    queries: Mapping[str, str],
    texts: Texts | Callable[[Candidates], Texts],
    load: Loader,
    spec: PhaseSpec,
    runs_dir: Path,
    stream: TextIO,
) -> tuple[Candidates, PhaseOutcome, list[RunFileInfo], list[dict[str, Any]], dict[str, float]]:
    """Freeze the candidates, score them through the journal and write the run files."""
    candidates = freeze(study.dir, sources)
    study.manifest["candidates"] = dict(candidates.sha256)
    study.save()
    if callable(texts):  # texts of exactly the frozen candidates (the full corpus is not in memory)
        texts = texts(candidates)
    with Journal(study.journal_path, stream=stream) as journal:
        outcome = run_phase(
            journal, candidates, queries, texts, load, spec, stream=stream, on_loaded=_on_loaded(study)
        )
        runs = write_runs(journal, candidates, spec, runs_dir)
        records = journal.records
        consistency = pointwise_consistency(journal, spec)
    return candidates, outcome, runs, records, consistency


def _on_loaded(study: Study) -> Callable[[str, Reranker], None]:
    """Record each model's metadata, and the host once torch is loaded, in the manifest as it loads."""

    def on_loaded(model: str, reranker: Reranker) -> None:
        entry = study.manifest["models"].setdefault(model, {})
        entry["meta"] = reranker.meta.to_dict()
        entry["attention_implementation"] = attention_implementations(reranker)
        entry["torch_settings"] = torch_settings()
        if "host_after_load" not in study.session:
            # torch is imported by now: torch threads and the GPU name/driver/clocks are known
            study.session["host_after_load"] = host_info()
        study.save()

    return on_loaded


def _record_not_run(study: Study, outcome: PhaseOutcome) -> None:
    # a model loaded in this session is "not run" now, or no longer (the session keeps history)
    for model in outcome.meta:
        entry = study.manifest["models"].setdefault(model, {})
        entry.pop("not_run", None)
        if model in outcome.not_run:
            entry["not_run"] = {
                "reason": outcome.not_run[model],
                "session_started_utc": study.session["started_utc"],
            }


def _run_record(r: RunFileInfo) -> dict[str, Any]:
    return {
        "stage": r.stage,
        "model": r.model,
        "depth": r.depth,
        "path": str(r.path) if r.path else None,
        "sha256": sha256_file(r.path) if r.path else None,
        "queries": r.queries,
        "errors": r.errors,
    }
