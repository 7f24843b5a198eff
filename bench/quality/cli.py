"""``bench quality``, ``bench determinism``, ``bench dtype-check``: thin commands over
``bench.quality.commands`` (plan section "Quality")."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from bench.core.errors import BenchError
from bench.core.folder_options import checks_option, first_stage_option, options, runs_option, study_option
from bench.core.hints import bench_command
from bench.core.interrupt import whole_command
from bench.core.paths import DTYPE_CHECK_DIR, RUN_FOLDERS, repo_root
from bench.core.plan import (
    DEPTHS,
    DETERMINISM_MODELS,
    DETERMINISM_STAGE,
    DTYPE_CHECK_MODELS,
    DTYPE_CHECK_QUERIES,
    PITFALL_RUN_IDS,
    PITFALL_STAGE,
    QUALITY_DEPTH,
    RERANKED_STAGES,
    RERANKERS,
)
from bench.quality import commands, inputs
from bench.quality.check2 import record_check, summary
from bench.quality.library import Setup
from bench.quality.verdicts import compare_runs, decide, format_verdicts, write_verdicts

_MODELS = click.Choice(sorted(RERANKERS))
_STAGES = click.Choice(sorted(RERANKED_STAGES))


def _setup(
    study: Path | None,
    default_study: str,
    runs: Path | None,
    default_runs: str,
    device: str,
    first_stage: Path | None,
    checks: Path | None,
) -> Setup:
    root = repo_root()
    return Setup(
        root=root,
        study_dir=study or root / default_study,
        runs_dir=runs or root / default_runs,
        first_stage_dir=first_stage or root / "runs" / "first-stage",
        checks_dir=checks or root / "results" / "adapter-checks",
        device=device,
    )


_common = options(
    study_option("Study directory (journal, manifest, frozen candidates); resumed if it exists."),
    runs_option("Where run files go (<runs>/<stage>/<model>@<k>.trec)."),
    first_stage_option(),
    checks_option(),
)


@click.command("quality")
@_common
@click.option("--stage", "stages", multiple=True, type=_STAGES, help="Default: every reranked stage.")
@click.option("--model", "models", multiple=True, type=_MODELS, help="Default: every plan reranker (rated).")
@click.option("--device", default="cuda", show_default=True)
@click.option(
    "--pitfalls",
    is_flag=True,
    help="The pitfalls experiment instead: the five declared Qwen3 "
    "variants on hybrid-71k (default study studies/pitfalls, runs results/pitfalls/runs).",
)
def quality(
    study: Path | None,
    runs: Path | None,
    first_stage: Path | None,
    checks: Path | None,
    stages: tuple[str, ...],
    models: tuple[str, ...],
    device: str,
    pitfalls: bool,
) -> None:
    """Rerank the frozen top 100 of every stage with every rated reranker (resumable)."""
    if pitfalls:
        if stages or models:
            raise click.UsageError("--pitfalls runs the plan's variants on hybrid-71k; drop --stage/--model")
        stages, models = (PITFALL_STAGE,), PITFALL_RUN_IDS  # their own runs, never in runs/<stage>/
    default_study, default_runs = (
        ("studies/pitfalls", RUN_FOLDERS["pitfalls"])
        if pitfalls
        else ("studies/quality", RUN_FOLDERS["quality"])
    )
    setup = _setup(study, default_study, runs, default_runs, device, first_stage, checks)
    hint = bench_command("quality", *(["--pitfalls"] if pitfalls else []), "--study", setup.study_dir) + (
        " (same options)"
    )
    with whole_command("quality phase", hint):
        study_obj, session, skipped = commands.run_session(
            setup,
            stages=stages or RERANKED_STAGES,
            models=models or tuple(RERANKERS),
            depths=DEPTHS,
            resume_hint=hint,
            what="quality phase",
        )
    for m, reason in skipped.items():
        print(f"skipped {m}: not rated ({reason})", file=sys.stderr)
    click.echo(
        f"{session.outcome.scored} calls scored, {session.outcome.skipped} already done, "
        f"{session.outcome.errors} failed; {len(session.runs)} run files under {setup.runs_dir}"
    )

    problems = []
    if session.runs:  # plan check 2 on every run this session wrote (none written: nothing to check)
        check2, failed = record_check(study_obj, session.runs, inputs.study_queries()[1])
        click.echo(f"plan check 2 (nDCG@10 vs pytrec_eval, {len(check2['runs'])} runs): {summary(check2)}")
        problems += [failed] if failed is not None else []
    if session.outcome.not_run:
        reasons = "; ".join(f"{m}: {r}" for m, r in session.outcome.not_run.items())
        problems.append(f"not run: {reasons}. Fix the cause and resume: {hint}")
    if problems:
        raise BenchError("\n".join(problems))


@click.command("determinism")
@_common
@click.option("--device", default="cuda", show_default=True)
def determinism(
    study: Path | None, runs: Path | None, first_stage: Path | None, checks: Path | None, device: str
) -> None:
    """Rerun bge-v2-m3, qwen3-0.6b and jina-v3.5 on hybrid-71k; nDCG@10 must agree within 0.1 points."""
    setup = _setup(
        study, "studies/determinism", runs, RUN_FOLDERS["determinism"], device, first_stage, checks
    )
    hint = bench_command("determinism", "--study", setup.study_dir) + " (same options)"
    with whole_command("determinism rerun", hint):
        _, _, skipped = commands.run_session(
            setup,
            stages=(DETERMINISM_STAGE,),
            models=DETERMINISM_MODELS,
            depths=DEPTHS,
            resume_hint=hint,
            what="determinism rerun",
        )
    _, qrels = inputs.study_queries()
    verdicts = compare_runs(
        "determinism",
        setup.root / "runs",
        setup.runs_dir,
        stage=DETERMINISM_STAGE,
        models=DETERMINISM_MODELS,
        depths=DEPTHS,
        qrels_path=qrels,
        first_stage=setup.first_stage_dir / f"{DETERMINISM_STAGE}.trec",
    )
    decision = decide(verdicts, [(m, k) for m in DETERMINISM_MODELS for k in DEPTHS], skipped)
    write_verdicts(
        setup.root / "results" / "determinism" / "verdicts.json",
        verdicts,
        {
            "stage": DETERMINISM_STAGE,
            "first_runs": str(setup.root / "runs"),
            "second_runs": str(setup.runs_dir),
            "decision": decision,
        },
    )
    click.echo(format_verdicts(verdicts, decision))
    _exit_on(decision)


@click.command("dtype-check")
@_common
@click.option("--gpu", default="cuda", show_default=True, help="The GPU device (vendor dtype).")
def dtype_check(
    study: Path | None, runs: Path | None, first_stage: Path | None, checks: Path | None, gpu: str
) -> None:
    """gte, bge, jina, qwen3-0.6b on 20 queries: CPU fp32 against the GPU (plan rule 0.5 points)."""
    base = study or repo_root() / "studies" / "dtype-check"
    out = runs or repo_root() / DTYPE_CHECK_DIR  # the sessions' runs: RUN_FOLDERS["dtype-check <name>"]
    dirs = {}
    skipped: dict[str, str] = {}
    for name, device, dtype in (("cpu-fp32", "cpu", "float32"), ("gpu", gpu, None)):
        setup = _setup(base / name, "", out / name / "runs", "", device, first_stage, checks)
        hint = bench_command("dtype-check", "--study", base) + " (same options)"
        with whole_command(f"dtype check ({name})", hint):
            _, _, not_rated = commands.run_session(
                setup,
                stages=(DETERMINISM_STAGE,),
                models=DTYPE_CHECK_MODELS,
                depths=(QUALITY_DEPTH,),
                resume_hint=hint,
                what=f"dtype check ({name})",
                max_queries=DTYPE_CHECK_QUERIES,
                dtype=dtype,
                rated_by=(gpu, None) if name == "cpu-fp32" else None,
            )
        dirs[name] = setup.runs_dir
        skipped.update(not_rated)
    queries, qrels = inputs.study_queries()
    qids = sorted(queries)[:DTYPE_CHECK_QUERIES]
    verdicts = compare_runs(
        "dtype",
        dirs["cpu-fp32"],
        dirs["gpu"],
        stage=DETERMINISM_STAGE,
        models=DTYPE_CHECK_MODELS,
        depths=(QUALITY_DEPTH,),
        qrels_path=qrels,
        first_stage=setup.first_stage_dir / f"{DETERMINISM_STAGE}.trec",
        qids=qids,
    )
    decision = decide(verdicts, [(m, QUALITY_DEPTH) for m in DTYPE_CHECK_MODELS], skipped)
    write_verdicts(
        out / "verdicts.json", verdicts, {"stage": DETERMINISM_STAGE, "queries": qids, "decision": decision}
    )
    click.echo(format_verdicts(verdicts, decision))
    _exit_on(decision)


def _exit_on(decision: dict[str, object]) -> None:
    """Exit 1 (message on stderr) unless every required model was checked and passed the plan's rule."""
    if decision["exit_code"] != 0:
        raise BenchError(f"{decision['problem']}; all_passed: false")
