"""A study's quality results from its run files (plan section "Quality"): metrics, intervals, tests, Holm,
wording, best model and winner, per stage and depth. :mod:`analysis.reporting.report` writes them out.

Layout read: ``<runs>/first-stage/<stage>.trec`` and ``<runs>/<stage>/<model>@<k>.trec``, where ``<model>`` is
a run id of :data:`analysis.core.plan.RUN_IDS` (a plan model, a declared rehearsal stand-in or a registered
variant); any other name is refused, so no run escapes its contamination mark.

Incomplete runs: every run records how many qrels queries it holds and which are missing. A reranked run
that misses queries its first stage has is *not rated* ("not rated: 3 of 305 queries missing"): its numbers
are recorded (a missing query scores 0) and it stays in its Holm family, but it is never worded better or
worse, never the best model, and no winner is declared at its stage and depth (deviation
D-014).

Comparison families (the plan: "Holm correction per stage and comparison family"; it does not mention
depth). Each depth is its own experimental condition, so a family is one stage *and one depth*:
``<stage>/@<k>/vs-first-stage`` (every model at depth k against the first stage) and
``<stage>/@<k>/vs-best`` (every other model at depth k against the best model at depth k). Depth 100 is the
plan's main depth; 20 and 50 are analysed the same way. The best model at a stage and depth is the one with
the highest mean nDCG@10 (ties: the smallest model id). All statistics use nDCG@10, the main metric.
"""

from __future__ import annotations

import errno
import hashlib
import multiprocessing
import os
import re
import stat
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from analysis.core import plan as _plan
from analysis.core.background import soon
from analysis.core.plan import (
    ALPHA,
    INTERVAL_METRICS,
    MAIN_METRIC,
    STANDIN_MARK,
    contamination_of,
    is_standin,
)
from analysis.inputs.reordering import CandidateIndex, RankedIds, check_reordering, name_codes
from analysis.inputs.trec import (
    TrecFormatError,
    fast_reader_enabled,
    read_fast_or_none,
    read_qrels,
    reference_table,
)
from analysis.int8.comparison import SEPARATE_MODELS
from analysis.reporting.wording import corpus_of, require_same_corpus, winner, word
from analysis.stats.metrics import MEASURES, Curves, Judgments, scored_indexed, scored_table
from analysis.stats.multiple import holm
from analysis.stats.resampling import (
    bootstrap_intervals,
    draw_resamples,
    paired_differences,
    randomisation_p_values,
)

if TYPE_CHECKING:
    from analysis.inputs.trec_fast import FastRun, PendingRun

__all__ = [
    "RunResult",
    "StageResult",
    "analyse_stages",
    "analyse_study",
    "best_models",
    "default_flags",
    "discover_runs",
    "flag_note",
    "load_stages",
    "paired_differences_vs_first",
    "run_label",
    "sha256_of",
]

FIRST_STAGE_DIR = "first-stage"
RUNS_FOLDER_KIND = "study runs folder"
_RUN_NAME = re.compile(r"^(?P<model>[A-Za-z0-9][A-Za-z0-9._-]*)@(?P<depth>[1-9][0-9]*)\.trec$")


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def default_flags() -> dict[str, str]:
    """run id -> contamination note for the plan's flagged models and their registered variants."""
    out = {}
    for m in _plan.RUN_IDS:
        c = contamination_of(m)
        if c is not None and c.flagged:
            out[m] = c.note
    return out


@dataclass
class RunResult:
    stage: str
    model: str | None  # None: the first stage
    depth: int | None
    path: str  # relative to the runs folder, "/" separated
    sha256: str
    per_query: dict[str, np.ndarray]
    means: dict[str, float] = field(default_factory=dict)
    intervals: dict[str, list[float]] = field(default_factory=dict)
    queries_present: int = 0  # qrels queries the run holds
    missing: tuple[str, ...] = ()  # qrels queries absent from the run (each scores 0)
    not_rated: str | None = None  # why a reranked run is not rated ("not rated: 3 of 305 queries missing")
    ids: RankedIds | None = field(default=None, repr=False)  # while loading: the reordering check's input
    # Hit@k and Recall@k for k up to 100, kept from the read: the costs section's context calculation
    curves: Curves | None = field(default=None, repr=False)


@dataclass
class StageResult:
    stage: str
    first_stage: RunResult
    runs: list[RunResult]
    families: list[dict[str, Any]] = field(default_factory=list)
    best: dict[int, str] = field(default_factory=dict)
    winner: dict[int, bool] = field(default_factory=dict)


def discover_runs(runs_dir: Path) -> dict[str, tuple[Path, list[tuple[str, int, Path]]]]:
    """stage -> (first-stage run, [(model, depth, run)]) sorted; refuses unexpected names."""
    first = runs_dir / FIRST_STAGE_DIR
    if not first.is_dir():
        raise TrecFormatError(
            first,
            None,
            "a folder first-stage/ with <stage>.trec files",
            "point --runs at the study's runs folder",
            RUNS_FOLDER_KIND,
        )
    stages: dict[str, tuple[Path, list[tuple[str, int, Path]]]] = {}
    for f in run_files(first):
        stages[f.stem] = (f, [])
    for f in sorted(p for p in runs_dir.iterdir() if not p.is_dir()):
        if _looks_like_run(f.name):  # README.md, LICENSE, a qrels file may lie beside the stage folders
            raise TrecFormatError(
                f,
                None,
                "run files in first-stage/ or a stage folder <stage>/",
                "move it into its stage's folder, or out of the runs folder",
                RUNS_FOLDER_KIND,
            )
    for d in sorted(p for p in runs_dir.iterdir() if p.is_dir() and p.name != FIRST_STAGE_DIR):
        if d.name not in stages:
            raise TrecFormatError(
                d,
                None,
                f"a first-stage run first-stage/{d.name}.trec for stage {d.name}",
                "add the stage's first-stage run, or remove the folder",
                RUNS_FOLDER_KIND,
            )
        for f in run_files(d):
            m = _RUN_NAME.match(f.name)
            if m is None:
                raise TrecFormatError(
                    f, None, "a run file named <model>@<k>.trec", "rename the file", RUNS_FOLDER_KIND
                )
            if m["model"] not in _plan.RUN_IDS:
                raise TrecFormatError(
                    f,
                    None,
                    f"a run file named <model>@<k>.trec with a known run id, found {m['model']!r}",
                    f"rename the file to one of {', '.join(_plan.RUN_IDS)} (plan models, rehearsal stand-ins "
                    "and registered variants), or register a new variant in analysis.core.plan.RUN_IDS",
                    RUNS_FOLDER_KIND,
                )
            if m["model"] in SEPARATE_MODELS:  # own comparison (analysis.int8), outside the Holm families
                continue
            stages[d.name][1].append((m["model"], int(m["depth"]), f))
    if not stages:
        raise TrecFormatError(
            first, None, "at least one first-stage run <stage>.trec", "run the first stages", RUNS_FOLDER_KIND
        )
    for stage in stages:
        corpus_of(stage)  # every stage id names its corpus
    return stages


def _looks_like_run(name: str) -> bool:
    return ".trec" in name.lower()


def run_files(folder: Path) -> list[Path]:
    """The ``*.trec`` files of a stage folder (or first-stage/), sorted. Anything else there is refused by
    name, so that no file is left out of the report unsaid: a compressed run (``.gz``: not read,
    so that the report reads exactly the bytes that ``bench audit`` checks and hashes; "gunzip it"),
    another case of the suffix (``.TREC``), a hidden run file, a folder, any other file."""
    out = []
    for f in sorted(folder.iterdir()):
        if f.is_file() and f.suffix == ".trec" and not f.name.startswith("."):
            out.append(f)
            continue
        lower = f.name.lower()
        if f.is_dir():
            expected = "only run files <name>.trec in a stage folder, found a folder"
            fix = "move the folder out of the runs folder"
        elif lower.endswith((".gz", ".bz2", ".xz", ".zst", ".zip")):
            expected = "an uncompressed run file <name>.trec, found a compressed file"
            fix = f"decompress it (e.g. `gunzip {f}`) so that the report reads it, or remove it"
        elif lower.endswith(".trec") and f.name.startswith("."):
            expected = "a visible run file, found a hidden one"
            fix = "remove it, or rename it without the leading dot"
        elif f.suffix == ".trec":  # the right name, but not a regular file to read
            expected, fix = _not_a_regular_file(f)
        elif lower.endswith(".trec"):
            expected, fix = "the suffix .trec in lower case", f"rename it to {f.name[: -len('.trec')]}.trec"
        else:
            expected = "only run files <name>.trec in a stage folder, found another file"
            fix = "move it out of the runs folder (the report reads every file there or refuses it)"
        raise TrecFormatError(f, None, expected, fix, RUNS_FOLDER_KIND)
    return out


def _not_a_regular_file(f: Path) -> tuple[str, str]:
    """(expected, fix) for a ``<name>.trec`` that is no regular file: a link loop, a dangling link, a FIFO."""
    if f.is_symlink():
        try:
            f.resolve(strict=True)
        except RuntimeError:  # Python 3.11 raises RuntimeError for a loop (3.13: OSError ELOOP)
            return "a run file, found a symbolic link loop", "replace the link with the run file it meant"
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return "a run file, found a symbolic link loop", "replace the link with the run file it meant"
            return (
                f"a run file, found a symbolic link to {os.readlink(f)}, which does not exist",
                "restore the file it points to, or replace the link with the run file",
            )
    kind = "a named pipe (FIFO)" if stat.S_ISFIFO(f.lstat().st_mode) else "a special file (socket or device)"
    return f"a regular run file, found {kind}", "replace it with the run file itself"


_Job = tuple[str, str | None, int | None, Path, Path]  # stage, model (None: first stage), depth, path, runs


def _load(
    stage: str, model: str | None, depth: int | None, path: Path, runs_dir: Path, judgments: Judgments
) -> RunResult:
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()  # of exactly the bytes parsed
    fast = read_fast_or_none(data, qrels_qids=judgments.qids, allow_unknown_queries=False)
    return _scored((stage, model, depth, path, runs_dir), judgments, data, sha, fast)


def _scored(
    job: _Job,
    judgments: Judgments,
    data: bytes,
    sha: str,
    fast: FastRun | None,
    doc: np.ndarray | None = None,
) -> RunResult:
    """The run of ``job`` scored: read by the columnar reader (``fast``; ``doc``: its rows' judged index,
    when known) or, where that is None, by the reference reader from ``data`` (whose SHA-256 is ``sha``)."""
    stage, model, depth, path, runs_dir = job
    if fast is not None:  # the columnar reader: docids never become Python strings
        if doc is None:
            from analysis.inputs.trec_fast import (  # pyarrow: only with the columnar reader
                doc_index,
                judged_docids,
            )

            doc = doc_index(fast, judged_docids(judgments))
        per_query, curves = scored_indexed(judgments, fast.qids, fast.offsets, doc)
        run_qids: tuple[str, ...] = fast.qids
        ids = RankedIds.of_fast(fast)
    else:
        table = reference_table(path, data, sha, qrels_qids=judgments.qids)
        per_query, curves = scored_table(judgments, table)
        run_qids = table.qids
        ids = RankedIds.of_table(table)
    del data
    rel = path.relative_to(runs_dir).as_posix()
    present = set(run_qids)
    missing = tuple(q for q in judgments.qids if q not in present)
    return RunResult(
        stage,
        model,
        depth,
        rel,
        sha,
        per_query,
        means={m: float(np.mean(v)) for m, v in per_query.items()},
        queries_present=len(judgments.qids) - len(missing),
        missing=missing,
        ids=ids,
        curves=curves,
    )


@dataclass(frozen=True)
class _Pending:
    """A reranked run read but for its docids (:func:`analysis.inputs.trec_fast.read_pending`), which are
    coded with its stage's first-stage run (:func:`_finish_stage`)."""

    job: _Job
    sha: str
    run: PendingRun


def _read(job: _Job, judgments: Judgments) -> RunResult | _Pending:
    """A first-stage run read and scored; a reranked run read up to its docids (columnar reader) or read and
    scored (the reference reader: where the columnar reader is off or declines the file)."""
    stage, model, depth, path, runs_dir = job
    if model is None or not fast_reader_enabled():
        return _load(stage, model, depth, path, runs_dir, judgments)
    from analysis.inputs.trec_fast import read_pending  # pyarrow: only with the columnar reader

    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()  # of exactly the bytes parsed
    pending = read_pending(data, qrels_qids=judgments.qids, allow_unknown_queries=False)
    if pending is None:  # read_fast would decline it too: the reference reader decides
        return _scored(job, judgments, data, sha, None)
    return _Pending(job, sha, pending)


def _finish_stage(reads: list[Future[RunResult | _Pending]], judgments: Judgments) -> list[Any]:
    """One stage's runs (its first stage's first), each a :class:`RunResult` or the exception its reading
    raised: the reranked runs' docids coded in the first stage's by one lookup for all of them
    (:func:`analysis.inputs.trec_fast.coded_runs`), and their rows' judged index taken from the first
    stage's names (one lookup, not one a run)."""
    out: list[Any] = [f.exception() or f.result() for f in reads]
    pending = [(i, o) for i, o in enumerate(out) if isinstance(o, _Pending)]
    if not pending:
        return out
    from analysis.inputs.trec_fast import (  # pyarrow: only with the columnar reader
        coded_runs,
        judged_docids,
        names_index,
    )

    first = out[0]
    names = first.ids.names if isinstance(first, RunResult) and first.ids is not None else None
    judged: np.ndarray | None = None
    for (i, p), fast in zip(pending, coded_runs([p.run for _, p in pending], names), strict=True):
        try:
            if fast is None:  # the reference reader decides: the file read (and hashed) again
                data = p.job[3].read_bytes()
                out[i] = _scored(p.job, judgments, data, hashlib.sha256(data).hexdigest(), None)
                continue
            doc = None
            if fast.doc_names is names:
                judged = names_index(fast.doc_names, judged_docids(judgments)) if judged is None else judged
                doc = judged[fast.doc_codes]
            out[i] = _scored(p.job, judgments, b"", p.sha, fast, doc)
        except Exception as exc:  # raised in job order by the caller, as a reading's
            out[i] = exc
    return out


def _family(
    fid: str, reference: str, rows: list[tuple[RunResult, RunResult]], p_values: np.ndarray, diffs: np.ndarray
) -> dict[str, Any]:
    reject, adjusted = holm(p_values, ALPHA) if len(rows) else (np.zeros(0, bool), np.zeros(0))
    comparisons = []
    for i, (run, ref) in enumerate(rows):
        diff = float(diffs[i])
        wording = run.not_rated or ref.not_rated or word(diff, float(adjusted[i]))
        comparisons.append(
            {
                "model": run.model,
                "depth": run.depth,
                "reference": ref.model or FIRST_STAGE_DIR,
                "mean_difference": diff,
                "p_value": float(p_values[i]),
                "p_holm": float(adjusted[i]),
                "significant": bool(reject[i]),
                "wording": wording,
            }
        )
    return {"id": fid, "reference": reference, "metric": MAIN_METRIC, "comparisons": comparisons}


_JUDGMENTS: Judgments | None = None  # set once in each worker process


def _init_worker(judgments: Judgments) -> None:
    global _JUDGMENTS
    _JUDGMENTS = judgments


def _load_job(job: tuple[str, str | None, int | None, Path, Path]) -> RunResult:
    if _JUDGMENTS is None:  # pragma: no cover - set by the initializer
        raise RuntimeError("worker not initialised")
    return _load(*job, _JUDGMENTS)


def _usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def worker_count(jobs: int) -> int:
    """Processes for reading runs: ``ANALYSIS_WORKERS`` if set, else 1. With the columnar reader one process
    (its files read on :func:`thread_count` threads) is faster than several: a reader process spends longer
    starting and importing pyarrow than reading its share. Results do not depend on it."""
    env = os.environ.get("ANALYSIS_WORKERS")
    if env:
        return max(1, int(env))
    return 1


def thread_count(jobs: int) -> int:
    """Threads reading run files in one process: ``ANALYSIS_THREADS`` if set, else the usable CPUs (at most
    4) when there are at least 8 files. Hashing, pyarrow and numpy release the GIL for the heavy work."""
    env = os.environ.get("ANALYSIS_THREADS")
    if env:
        return max(1, int(env))
    return 1 if jobs < 8 else max(1, min(_usable_cpus(), 4))


def load_stages(
    runs_dir: Path,
    judgments: Judgments,
    *,
    loaded: Callable[[list[StageResult]], None] | None = None,
    scored: Callable[[StageResult], None] | None = None,
) -> list[StageResult]:
    """Read, validate and score every run of the study (no statistics yet); files are read on threads
    (:func:`thread_count`), or in parallel processes (forkserver) when :func:`worker_count` says so.
    ``scored(stage)`` is called for each stage as soon as its runs are scored (in stage order; on the
    threads, while later stages are read), ``loaded(stages)`` once every run is scored and no reading
    failed; a reordering break is raised after ``loaded``."""
    layout = discover_runs(runs_dir)
    jobs: list[_Job] = []
    for stage, (first_path, reranked) in layout.items():
        jobs.append((stage, None, None, first_path, runs_dir))
        jobs += [
            (stage, model, depth, p, runs_dir)
            for model, depth, p in sorted(reranked, key=lambda x: (-x[1], x[0]))
        ]
    workers = worker_count(len(jobs))
    if workers > 1:
        results = _load_in_processes(jobs, judgments, workers)
        if results is not None:
            stages = _stage_results(layout, results)
            for s in stages:
                if scored is not None:
                    scored(s)
            if loaded is not None:
                loaded(stages)
            check_stages_reorder(stages, runs_dir, thread_count(len(jobs)))
            return stages
    return _load_in_threads(layout, jobs, judgments, thread_count(len(jobs)), runs_dir, (scored, loaded))


def _load_in_processes(jobs: list[_Job], judgments: Judgments, workers: int) -> list[RunResult] | None:
    try:
        context = multiprocessing.get_context("forkserver")
        with ProcessPoolExecutor(
            workers, mp_context=context, initializer=_init_worker, initargs=(judgments,)
        ) as pool:
            return list(pool.map(_load_job, jobs, chunksize=4))
    except (OSError, BrokenProcessPool):  # no processes here (sandbox): read in this process
        return None


def _stage_results(
    layout: Mapping[str, tuple[Path, list[Any]]], results: list[RunResult]
) -> list[StageResult]:
    stages: list[StageResult] = []
    i = 0
    for stage, (_, reranked) in layout.items():
        stages.append(StageResult(stage, results[i], results[i + 1 : i + 1 + len(reranked)]))
        i += 1 + len(reranked)
    return stages


def _load_in_threads(
    layout: Mapping[str, tuple[Path, list[Any]]],
    jobs: list[_Job],
    judgments: Judgments,
    threads: int,
    runs_dir: Path,
    hooks: tuple[Callable[[StageResult], None] | None, Callable[[list[StageResult]], None] | None],
) -> list[StageResult]:
    """The runs read on ``threads`` threads; each stage, once its files are read, finished on a thread of
    its own (:func:`_finish_stage`), handed to ``scored`` and its reordering checked there, while the next
    stages are read. The first reading error in job order is raised first, then ``loaded(stages)`` is
    called, then the first reordering break in stage order is raised (``hooks``: scored, loaded)."""
    scored, loaded = hooks
    if fast_reader_enabled():
        from analysis.inputs.trec_fast import judged_docids  # pyarrow: only with the columnar reader

        judged_docids(judgments)  # built once, before the threads share it
    with ThreadPoolExecutor(threads) as pool, ThreadPoolExecutor(1) as stage_pool:
        reads = [pool.submit(_read, job, judgments) for job in jobs]
        finished: list[Future[tuple[list[Any], StageResult | None]]] = []
        checked: list[Future[None]] = []
        start = 0
        for _, reranked in layout.values():
            group = reads[start : start + 1 + len(reranked)]
            start += len(group)
            wait(group)
            finished.append(stage_pool.submit(_stage_of, group, judgments, scored))
            checked.append(stage_pool.submit(_check_stage, finished[-1], runs_dir))
        for f in finished:
            for r in f.result()[0]:
                if isinstance(r, BaseException):
                    raise r  # the first reading error in job order
        stages = [stage for f in finished if (stage := f.result()[1]) is not None]  # each, as none failed
        if loaded is not None:
            loaded(stages)
        for check in checked:
            check.result()  # the first break in stage order
    return stages


def _stage_of(
    reads: list[Future[RunResult | _Pending]],
    judgments: Judgments,
    scored: Callable[[StageResult], None] | None,
) -> tuple[list[Any], StageResult | None]:
    """:func:`_finish_stage`'s runs and, if none failed, their stage (handed to ``scored``)."""
    runs = _finish_stage(reads, judgments)
    if any(isinstance(r, BaseException) for r in runs):
        return runs, None
    stage = StageResult(runs[0].stage, runs[0], runs[1:])
    if scored is not None:
        scored(stage)
    return runs, stage


def _check_stage(finished: Future[tuple[list[Any], StageResult | None]], runs_dir: Path) -> None:
    """The reordering check of one stage (:func:`check_stages_reorder`), once its runs are all read."""
    stage = finished.result()[1]
    if stage is not None:
        check_stages_reorder([stage], runs_dir)


def check_stages_reorder(stages: list[StageResult], runs_dir: Path, threads: int = 1) -> None:
    """Every reranked run reorders its stage's first-stage candidates (:mod:`analysis.inputs.reordering`);
    the first break (in the order of the stages and runs) raises, naming the file, line, query, id and rank.
    The ids are dropped afterwards. One stage per job; pyarrow's lookup releases the GIL, so ``threads``
    share them."""

    def check(s: StageResult) -> None:
        first = s.first_stage.ids
        runs = [r for r in s.runs if r.ids is not None and r.depth is not None]
        if first is None or not runs:
            return
        index = CandidateIndex.of(first)
        for r, codes in zip(runs, name_codes(first, [r.ids for r in runs]), strict=True):  # type: ignore[misc]
            check_reordering(
                index,
                r.ids,  # type: ignore[arg-type]
                int(r.depth),  # type: ignore[arg-type]
                run_path=runs_dir / r.path,
                first_name=s.first_stage.path,
                codes=codes,
            )

    if threads > 1 and len(stages) > 1:
        with ThreadPoolExecutor(min(threads, len(stages))) as pool:
            list(pool.map(check, stages))  # raises the first break in stage order
    else:
        for s in stages:
            check(s)
    for s in stages:
        for r in (s.first_stage, *s.runs):
            r.ids = None


def analyse_study(
    runs_dir: Path,
    qrels_path: Path,
    *,
    best_chosen: Callable[[StageFeed], None] | None = None,
) -> tuple[list[StageResult], dict[str, Any]]:
    """All stages' results and the inputs record (qrels and run SHA-256s, query count). The resample matrices
    are drawn on a thread while the runs are read; the statistics (:func:`analyse_stages`) run on a thread
    once every run is scored, beside the last stage's reordering check (a break is raised first).
    ``best_chosen(stages)``: called before the runs are read (the report starts plan check 2 there, which
    needs only the best models) with a :class:`StageFeed` of copies of the stages that hold their best
    models (:func:`best_models`; the same models :func:`analyse_stages` chooses), each handed over as soon
    as its stage's runs are scored, before its reordering check, the intervals and the tests."""
    qrels = read_qrels(qrels_path)
    if not any(label > 0 for judged in qrels.values() for label in judged.values()):
        count = sum(len(judged) for judged in qrels.values())
        raise ValueError(
            f"{qrels_path}: expected at least one relevant judgment (label above 0), found none "
            f"among {count}: every metric would be 0 and the best model "
            "a tie broken by name. Fix: pass the study's qrels "
            "(labels 1 and above mark relevant passages)"
        )
    judgments = Judgments.from_qrels(qrels)
    n = len(judgments.qids)
    drawn = soon("resamples", draw_resamples, n)
    analysed: list[Future[None]] = []
    feed = StageFeed(judgments)
    if best_chosen is not None:
        best_chosen(feed)

    def loaded(stages: list[StageResult]) -> None:  # one product for all (per stage: more BLAS threads' spin)
        analysed.append(soon("statistics", _analyse_drawn, drawn, stages, n))

    try:
        stages = load_stages(
            runs_dir, judgments, loaded=loaded, scored=lambda s: feed.put(best_models([s], n)[0])
        )
    finally:
        feed.close()
    analysed[0].result()
    inputs = {
        "qrels": {"file": qrels_path.name, "sha256": sha256_of(qrels_path)},
        "queries": len(judgments.qids),
        "measures": list(MEASURES),
    }
    return stages, inputs


class StageFeed:
    """Stages handed over one at a time (:func:`analyse_study`'s ``best_chosen``): iterating waits for each
    next stage until the feed is closed (after the last stage, or when the reading failed); iterating
    again gives the stages handed over so far. ``judgments``: the study's qrels as they were read for it."""

    def __init__(self, judgments: Judgments | None = None) -> None:
        self.judgments = judgments
        self._stages: list[StageResult] = []
        self._closed = False
        self._changed = threading.Condition()

    def put(self, stage: StageResult) -> None:
        with self._changed:
            self._stages.append(stage)
            self._changed.notify_all()

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def __iter__(self) -> Iterator[StageResult]:
        i = 0
        while True:
            with self._changed:
                while i >= len(self._stages) and not self._closed:
                    self._changed.wait()
                if i >= len(self._stages):
                    return
                stage = self._stages[i]
            yield stage
            i += 1


def _analyse_drawn(drawn: Future[None], stages: list[StageResult], n: int) -> None:
    drawn.result()
    analyse_stages(stages, n)


def analyse_stages(
    stages: list[StageResult],
    n: int,
    *,
    intervals: bool = True,
    best_chosen: Callable[[list[StageResult]], None] | None = None,
) -> None:
    """Fill intervals, families, best models and winners of ``stages`` in place (runs already scored).
    ``best_chosen(stages)`` is called once the best models are chosen, before the intervals and tests
    (:func:`analyse_study` hands them out earlier, with :func:`best_models`).

    Idempotent: earlier families, best models and winners are replaced.
    """
    for s in stages:
        s.families, s.best, s.winner = [], {}, {}
        mark_incomplete(s, n)
    planned = _plan_families(stages)
    if best_chosen is not None:
        best_chosen(stages)
    every_run = [r for s in stages for r in (s.first_stage, *s.runs)]
    columns = [(metric, r) for metric in (INTERVAL_METRICS if intervals else ()) for r in every_run]
    if columns:  # every metric's intervals from one product with the resample weights (exact sums: the same)
        values = np.column_stack([r.per_query[metric] for metric, r in columns])
        for (metric, r), interval in zip(columns, bootstrap_intervals(values), strict=True):
            r.intervals[metric] = [float(interval[0]), float(interval[1])]

    # every comparison of the study as one matrix: the same sign vectors for all (see
    # analysis.stats.resampling)
    pairs = [pair for *_, rows in planned for pair in rows]
    for a, b in pairs:  # comparisons stay within a stage, so never across corpora
        require_same_corpus(a.stage, b.stage)
    if pairs:
        d = paired_differences(  # column by column (elementwise): one call for every pair
            np.column_stack([a.per_query[MAIN_METRIC] for a, _ in pairs]),
            np.column_stack([b.per_query[MAIN_METRIC] for _, b in pairs]),
        )
        p_all = randomisation_p_values(d)
        diff_all = np.array([a.means[MAIN_METRIC] - b.means[MAIN_METRIC] for a, b in pairs])
    else:
        p_all, diff_all = np.zeros(0), np.zeros(0)
    start = 0
    for s, depth, kind, rows in planned:
        stop = start + len(rows)
        reference = FIRST_STAGE_DIR if kind == "vs-first-stage" else s.best[depth]
        s.families.append(
            _family(f"{s.stage}/@{depth}/{kind}", reference, rows, p_all[start:stop], diff_all[start:stop])
        )
        start = stop
    _choose_winners(stages)


def best_models(stages: list[StageResult], n: int) -> list[StageResult]:
    """Copies of ``stages`` (the same runs) with their best models chosen as :func:`analyse_stages` chooses
    them, for work that needs only the best models to start beside the rest of the analysis (which replaces
    the best models of ``stages`` while it runs, so the copies keep their own). Marks the runs that are not
    rated, as :func:`analyse_stages` does."""
    copies = [replace(s, families=[], best={}, winner={}) for s in stages]
    for s in copies:
        mark_incomplete(s, n)
    _plan_families(copies)
    return copies


def _plan_families(
    stages: list[StageResult],
) -> list[tuple[StageResult, int, str, list[tuple[RunResult, RunResult]]]]:
    """Each stage's families in order (depths deepest first; vs-first-stage, then vs-best) with their pairs
    (run, reference); sets each stage's best model per depth."""
    planned: list[tuple[StageResult, int, str, list[tuple[RunResult, RunResult]]]] = []
    for s in stages:
        for depth in sorted({r.depth for r in s.runs if r.depth is not None}, reverse=True):
            at_depth = [r for r in s.runs if r.depth == depth]
            planned.append((s, depth, "vs-first-stage", [(r, s.first_stage) for r in at_depth]))
            rated = [r for r in at_depth if r.not_rated is None]
            if not rated:  # no best model among runs that are not rated, so no family against it
                continue
            best = min(rated, key=lambda r: (-r.means[MAIN_METRIC], r.model or ""))
            s.best[depth] = str(best.model)
            planned.append((s, depth, "vs-best", [(r, best) for r in at_depth if r is not best]))
    return planned


def _choose_winners(stages: list[StageResult]) -> None:
    for s in stages:
        fam = {f["id"]: f for f in s.families}
        for depth, best_model in s.best.items():
            vs_best = fam[f"{s.stage}/@{depth}/vs-best"]["comparisons"]
            vs_first = next(
                c
                for c in fam[f"{s.stage}/@{depth}/vs-first-stage"]["comparisons"]
                if c["model"] == best_model
            )
            # the best model's view of each comparison: word(best - other)
            mirrored = {c["model"]: word(-c["mean_difference"], c["p_holm"]) for c in vs_best}
            complete = all(r.not_rated is None for r in s.runs if r.depth == depth)
            s.winner[depth] = complete and winner(mirrored, vs_first["wording"])
        for depth in {r.depth for r in s.runs if r.depth is not None} - set(s.best):
            s.winner[depth] = False  # every run at this depth is not rated


def paired_differences_vs_first(stage: StageResult) -> list[dict[str, object]]:
    """Per reranked run: mean paired nDCG@10 difference to the first stage, its 95 % percentile interval of
    the paired bootstrap (points; the same resamples over queries and seed as every interval,
    :func:`analysis.stats.resampling.bootstrap_intervals` on the per-query differences) and the Holm verdict
    of the vs-first-stage family. Drawn in the stage figure's right panel; computed only when figures are
    drawn."""
    verdicts: dict[tuple[str | None, int | None], str] = {}
    for fam in stage.families:
        if fam["id"].rsplit("/", 1)[1] == "vs-first-stage":
            for c in fam["comparisons"]:
                verdicts[(c["model"], c["depth"])] = c["wording"]
    runs = stage.runs
    if not runs:
        return []
    base = stage.first_stage.per_query[MAIN_METRIC]
    diffs = np.column_stack([r.per_query[MAIN_METRIC] - base for r in runs])
    intervals = bootstrap_intervals(diffs)
    return [
        {
            "run": r,
            "mean": 100 * float(diffs[:, i].mean()),
            "low": 100 * float(intervals[i][0]),
            "high": 100 * float(intervals[i][1]),
            "verdict": verdicts.get((r.model, r.depth), "not rated"),
        }
        for i, r in enumerate(runs)
    ]


def mark_incomplete(s: StageResult, n: int) -> None:
    """Set ``not_rated`` on every reranked run that misses queries its first stage holds (``n``: the number
    of qrels queries). Queries missing from the first stage too cannot be reranked and do not count."""
    first_missing = set(s.first_stage.missing)
    for r in s.runs:
        extra = [q for q in r.missing if q not in first_missing]
        r.not_rated = f"not rated: {len(extra)} of {n} queries missing" if extra else None


def flag_note(r: RunResult, flags: Mapping[str, str], stage_flags: Mapping[str, str]) -> str | None:
    """The contamination note of a run: its model's flag, or for a first stage its stage's flag."""
    if r.model is None:
        return stage_flags.get(r.stage)
    return flags.get(r.model)


def run_label(r: RunResult, flags: Mapping[str, str], stage_flags: Mapping[str, str]) -> str:
    """A run's name in tables and figures, with its contamination mark and, if incomplete, its mark."""
    mark = "†" if flag_note(r, flags, stage_flags) is not None else ""
    if r.model is None:
        return f"first stage{mark}"
    mark += STANDIN_MARK if is_standin(r.model) else ""
    name = f"{r.model}{mark}@{r.depth}"
    return f"{name} (incomplete: {r.queries_present} queries)" if r.not_rated else name
