"""The rehearsal's CPU latency step: the plan's CPU preset scaled to fit.

The stand-in ``minilm-standin`` from the reranker registry, *without* the passage cache, so every call
encodes the query and all k passages (the plan's unit); 5 warm-up calls, then 10 queries sampled with
seed 20261009 from the queries of the reranked stage, at k = 20 and 100, one pass (the rehearsal
checks that the pipeline runs and is not a measurement, so it times fewer calls than the plan's CPU preset,
which ``bench latency cpu`` keeps unchanged); scores compared with the
rehearsal's quality run; host state, telemetry, and the first-stage query times of every stage that ran.
Blocks go to ``<rehearsal>/latency/not-published/`` (a rehearsal is never published); the host is shared,
so a busy host is measured anyway and every block says so (``--allow-busy`` recorded).

``latency_step`` returns the fp32 per-query times (``fp32_ns``: k -> query id -> ns) of the same 10
queries, for the int8 step to compare against without timing fp32 again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from analysis.inputs.trec import read_run
from analysis.latency import Block, block_summary, per_query_ns, read_blocks
from bench.core.plan import CPU_DEPTHS, SEED
from bench.integrity import hashing
from bench.latency import timer
from bench.latency.commands import measure_all
from bench.latency.firststage import convert
from bench.latency.presets import Preset
from bench.latency.run import Inputs, Settings
from bench.latency.telemetry import Sampler, host_probes
from bench.records import provenance
from bench.rerankers.registry import load_reranker

REHEARSAL_MODEL = "minilm-standin"
# bm25-standin is timed too (about a millisecond a call), so that the decision figure has several options per
# stage and machine; the int8 step compares only the MiniLM stand-in
REHEARSAL_MODELS = (REHEARSAL_MODEL, "bm25-standin")
REHEARSAL_WARMUP = 5  # the rehearsal's budget (the plan's CPU preset: 20)
REHEARSAL_QUERIES = 10
REHEARSAL_PRESET = Preset(
    name="rehearsal",
    kind="cpu",
    published=False,
    device="cpu",
    passes=1,
    depths=CPU_DEPTHS,
    warmup=REHEARSAL_WARMUP,
    sample=REHEARSAL_QUERIES,
    sample_seed=SEED,
    models=REHEARSAL_MODELS,
)
SESSION = "rehearsal"


def latency_step(
    directory: Path,
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    stage: str,
    *,
    stream: TextIO,
    log: Callable[[str], None],
    device: str = "cpu",
    load: Callable[[str], Any] | None = None,
    models: tuple[str, ...] = REHEARSAL_MODELS,
    max_seq: int | None = None,
) -> dict[str, Any]:
    """Measure the stand-ins' blocks and convert the first-stage records; a summary for rehearsal.json.
    ``bm25-standin`` gets its statistics from ``texts`` (the rehearsal's corpus)."""
    out_root = directory / "latency"
    inputs = _inputs(directory, queries, texts, stage)
    manifest = provenance.collect_manifest(kind="rehearsal", device=device, dtype="float32", root=None)
    result = measure_all(
        models,
        _settings(directory, stage, models, len(inputs.queries)),
        inputs,
        timer=timer.timer_for(device),
        manifest=manifest,
        refused={},
        sampler=lambda: Sampler(host_probes(), interval_s=0.5),
        stream=stream,
        load=load if load is not None else _standin_loader(texts, device, max_seq),
    )
    first = _first_stage_blocks(directory, {**manifest, "kind": "rehearsal"}, log)
    rows, fp32 = _summary_rows([*result["records"], *(b for b, _ in first)])
    return {
        "dir": str(out_root),
        "rows": rows,
        "fp32_ns": fp32,
        "query_ids": sorted(next(iter(fp32.values()), {})),
    }


def _inputs(directory: Path, queries: Mapping[str, str], texts: Mapping[str, str], stage: str) -> Inputs:
    """The timed calls' inputs: the stage's first-stage lists, cut at the largest CPU depth."""
    run_path = directory / "runs" / "first-stage" / f"{stage}.trec"
    run = read_run(run_path, allow_unknown_queries=True)
    k_max = max(CPU_DEPTHS)
    lists = {q: tuple(d for d, _ in run.get(q, [])[:k_max]) for q in queries if q in run}
    return Inputs(
        {q: queries[q] for q in lists},
        lists,
        texts,
        {"stage": stage, "run_file": str(run_path), "sha256": hashing.sha256_file(run_path)},
    )


def _settings(directory: Path, stage: str, models: tuple[str, ...], n_queries: int) -> Settings:
    return Settings(
        preset=REHEARSAL_PRESET,
        machine="rehearsal machine (shared, not published)",
        session=SESSION,
        out_root=directory / "latency",
        runs_dir=directory / "runs",
        stage=stage,
        allow_busy=True,
        unrated={m: "a stand-in, never adapter-checked" for m in models},
        sample=min(REHEARSAL_QUERIES, n_queries),
    )


def _standin_loader(texts: Mapping[str, str], device: str, max_seq: int | None) -> Callable[[str], Any]:
    """The registry's stand-ins; ``bm25-standin`` with the rehearsal's corpus for its statistics, the MiniLM
    one with the rehearsal's input cut ``max_seq`` (None: the registry's default, the bundled cut)."""
    corpus = list(texts.values())  # the corpus in import order, as the quality phase builds it

    def load(model: str) -> Any:
        if model == "bm25-standin":
            return load_reranker(model, device=device, corpus=corpus)
        return load_reranker(model, device=device, max_length=max_seq)

    return load


def _first_stage_blocks(
    directory: Path, manifest: Mapping[str, Any], log: Callable[[str], None]
) -> list[tuple[Block, bool]]:
    """The first-stage query times converted to latency blocks; [] when they cannot be (said in the log)."""
    try:
        return convert(
            directory / "first-stage",
            directory / "latency",
            machine="rehearsal machine",
            session=SESSION,
            published=False,
            manifest=manifest,
        )
    except Exception as exc:  # a resumed rehearsal's older record without per-query ids: said, not hidden
        log(f"latency: first-stage times not converted ({exc})")
        return []


def _summary_rows(blocks: list[Block]) -> tuple[list[dict[str, Any]], dict[int, dict[str, int]]]:
    """One summary row per block, and the MiniLM stand-in's per-query ns by k (for the int8 step)."""
    rows = []
    fp32: dict[int, dict[str, int]] = {}
    for block in blocks:
        s = block_summary(block)
        rows.append(
            {
                "target": block.target,
                "k": block.k,
                "n": s.latency.n,
                "p50_ms": s.latency.p50_ms,
                "p95_ms": s.latency.p95_ms,
                "mean_ms": s.latency.mean_ms,
                "chunk_size": block.chunk_size,
                "server_p50_ms": s.server_ms.p50 if s.server_ms else None,
                "accuracy": block.accuracy.status,
                "marks": list(block.marks),
            }
        )
        if block.target == REHEARSAL_MODEL:
            fp32[block.k] = per_query_ns(block)
    return rows, fp32


def format_latency_table(rows: list[dict[str, Any]]) -> str:
    def ms(x: float | None) -> str:
        return "" if x is None else f"{x:,.1f}"

    out = [
        "| target | k | n | p50 ms | p95 ms | mean ms | server p50 ms | accuracy |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['target']} | {r['k']} | {r['n']} | {ms(r['p50_ms'])} | {ms(r['p95_ms'])} | "
            f"{ms(r['mean_ms'])} | {ms(r['server_p50_ms'])} | {r['accuracy']} |"
        )
    return "\n".join(out)


def fp32_timings(directory: Path) -> dict[int, dict[str, int]]:
    """k -> query id -> ns of the stand-in's fp32 blocks of a rehearsal (for the int8 step); {} if none."""
    folder = directory / "latency" / "not-published" / REHEARSAL_PRESET.kind / SESSION / REHEARSAL_MODEL
    if not folder.is_dir():
        return {}
    return {b.k: per_query_ns(b) for b in read_blocks(folder)}
