"""``bench audit``: thin command over ``bench.audit.run.audit``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

import bench.quality.inputs as inputs_mod
from bench.audit.example import build_example
from bench.audit.reproduce import (
    DEFAULT_MODELS,
    check_inputs_cover_runs,
    committed_stages,
    format_result,
    new_dir,
    recorded_cuts,
)
from bench.audit.reproduce import reproduce as run_reproduce
from bench.audit.rows import exit_code, format_table
from bench.audit.run import audit as run_audit
from bench.audit.steps import with_steps
from bench.core.errors import BenchError
from bench.core.hints import bench_command
from bench.core.interrupt import whole_command
from bench.core.liblog import library_log
from bench.core.paths import repo_root
from bench.core.reads import stage_reads
from bench.integrity.cli import HEADERS_OPTION
from bench.records import codeversion, guard, provenance
from bench.rehearse.inputs import load_inputs
from bench.rerankers.bm25 import BM25_ID


@click.command("audit")
@click.option(
    "--qrels",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Qrels for recomputing results (default: found by the SHA-256 that results/quality/"
    "study.json records, among the datasets.lock files and runs/).",
)
@click.option("--verbose", is_flag=True, help="Every detail line of every row (default: the first 20).")
@click.option(
    "--example",
    type=click.Path(path_type=Path),
    default=None,
    metavar="DIR",
    help="Build a small practice study (runs, results, manifests; no torch) as a new git "
    "repository in DIR, outside this one, and audit it (docs/reviewing.md).",
)
@click.option(
    "--root",
    "study_root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="The repository to audit (default: this one, or $BENCH_ROOT), e.g. the example study.",
)
@HEADERS_OPTION
def audit(
    qrels: Path | None, verbose: bool, example: Path | None, study_root: Path | None, header_file: Path | None
) -> None:
    """Can I trust this repository? One table: OK / NOT YET / FAIL per check (no GPU, no network).

    Exit 0: every row OK; 1: a row failed; 3: nothing failed, but something is not done yet (e.g. not
    stamped, no study run committed)."""
    t0 = time.perf_counter()
    root = study_root.resolve() if study_root is not None else repo_root()
    if example is not None:
        root = build_example(example, repo_root())
        click.echo(
            f"EXAMPLE study built in {root} ({time.perf_counter() - t0:.1f} s); its audit "
            f"(again: `bench audit --root {root}`):\n"
        )
    rows = with_steps(run_audit(root, qrels=qrels, header_file=header_file), repo_root())
    click.echo(format_table(rows, max_details=10**9 if verbose else 20))
    code = exit_code(rows)
    words = {0: "all checks OK", 1: "a check FAILED", 3: "nothing failed; something is NOT YET done"}
    click.echo(f"\n{words[code]} (exit {code}; {time.perf_counter() - t0:.1f} s)")
    raise SystemExit(code)


NO_CORPUS = (
    f"{BM25_ID} is the rehearsal's lexical stand-in: it scores with the term statistics of the rehearsal "
    "corpus its runs came from, which a measurement does not have; reproduce it with --bundled or --dataset "
    "DIR (the rehearsal's inputs), or leave it out (--model)"
)


def load_reranker(model: str, **options: Any) -> Any:
    """``bench.rerankers.registry.load_reranker``, imported when a reproduction loads a model."""
    # the registry loads the server and API clients (httpx), which the reviewer's `review` group does not
    # install: `bench audit` and `bench reproduce --help` run without them (tests/review/test_review_env.py)
    from bench.rerankers.registry import load_reranker as load

    return load(model, **options)


@click.command("reproduce")
@click.option(
    "--model",
    "models",
    multiple=True,
    default=None,
    help="A reranker id; repeatable (default: the two the README names, bge-v2-m3 and qwen3-0.6b).",
)
@click.option(
    "--stage",
    "stages",
    multiple=True,
    default=None,
    help="A stage; repeatable (default: every stage with committed runs and results).",
)
@click.option("--device", default="cuda", show_default=True, help="Where the rerankers run.")
@click.option(
    "--qrels",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Qrels (default: the study's, from the pinned MIRACL snapshot).",
)
@click.option(
    "--dataset",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Rehearsal-style inputs in BEIR layout instead of the study's hub data.",
)
@click.option("--bundled", is_flag=True, help="Rehearsal-style inputs: the bundled MIRACL-de sample.")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Study folder of the rerun (default reproduce/<utc-time>/, git-ignored).",
)
def reproduce(
    models: tuple[str, ...],
    stages: tuple[str, ...],
    device: str,
    qrels: Path | None,
    dataset: Path | None,
    bundled: bool,
    out_dir: Path | None,
) -> None:
    """Rerun two rerankers on the committed first-stage runs; nDCG@10 within 0.1 points of results/?

    Exit 0: every comparison within the plan's 0.1 points; 1: a comparison failed or nothing to compare."""
    root = repo_root()
    out_dir = out_dir or new_dir(root)
    chosen_models = list(models) or list(DEFAULT_MODELS)
    cuts = recorded_cuts(root, chosen_models)  # a stand-in's cut is the study's (D-045), refused if unknown
    texts: Any
    corpus: list[str] | None = None  # bm25-standin's term statistics: the rehearsal corpus its runs came from
    if dataset is not None or bundled:
        kind = "rehearsal"
        pre = guard.preflight("rehearsal", lock_names=["bundled"], root=root)
        inputs = load_inputs(dataset, None)
        queries, texts = inputs.queries, {p.docid: p.passage_text for p in inputs.corpus}
        check_inputs_cover_runs(
            root,
            list(stages) or None,
            queries,
            texts,
            f"the dataset {dataset}" if dataset is not None else "the bundled sample",
        )
        corpus = [p.passage_text for p in inputs.corpus]
        out_dir.mkdir(parents=True, exist_ok=True)
        qrels = qrels or inputs.write_qrels(out_dir / "qrels.tsv")
    else:
        kind = "measurement"
        if BM25_ID in chosen_models:
            raise BenchError(NO_CORPUS)
        codeversion.require_clean_code(root)  # the rerun names its code, as every measurement does
        # the data of every stage that will be rerun (not only keyword-full's)
        pre = guard.preflight(
            "measurement", lock_names=stage_reads(list(stages) or committed_stages(root)), root=root
        )
        queries, study_qrels = inputs_mod.study_queries()
        texts, qrels = inputs_mod.candidate_texts, qrels or study_qrels
    prov = provenance.collect_manifest(kind="reproduction", device=device, root=root)

    def load(model: str) -> Any:
        if model == BM25_ID:  # as `bench rehearse` ran it: over the rehearsal's corpus, on the CPU (no model)
            return load_reranker(model, device="cpu", corpus=corpus)
        return load_reranker(model, device=device, max_length=cuts.get(model))

    log = out_dir / "libraries.log"

    hint = bench_command("reproduce", "--out", out_dir, root=root)
    with whole_command("reproduction", hint), library_log(log):
        result = run_reproduce(
            root,
            models=chosen_models,
            stages=list(stages) or None,
            qrels=qrels,
            queries=queries,
            texts=texts,
            load=load,
            out_dir=out_dir,
            provenance=prov,
            preflight=pre,
            kind=kind,
        )
    click.echo(format_result(result))
    raise SystemExit(result.exit_code)
