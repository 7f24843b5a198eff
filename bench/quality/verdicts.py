"""Inputs for the plan's determinism and data-type rules, and the verdicts ``analysis.reporting.checks``
gives them.

nDCG@10 is ``analysis.stats.metrics.mean_scores`` over the qrels queries in question (all dev queries for the
determinism rerun; the 20 dtype-check queries for the data-type check: a query missing from a run
counts 0). The rule functions are analysis's (``determinism``, ``dtype_rule``); nothing is decided here.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from analysis.core.atomic import write_json_atomic
from analysis.inputs.reordering import check_run_files
from analysis.inputs.trec import TrecFormatError, read_qrels, read_run
from analysis.reporting.checks import determinism, dtype_rule
from analysis.stats.metrics import mean_scores
from bench.core.errors import BenchError
from bench.quality.runs import run_path


def ndcg10(run_file: Path, qrels: Mapping[str, Mapping[str, int]]) -> float:
    if not run_file.is_file():
        raise BenchError(f"{run_file} missing: the run the rule compares against has not been written")
    run = read_run(run_file, allow_unknown_queries=True)
    run = {q: rows for q, rows in run.items() if q in qrels}
    return mean_scores(qrels, run, measures=["ndcg@10"])["ndcg@10"]


def restricted_qrels(qrels_path: Path, qids: Collection[str] | None) -> dict[str, dict[str, int]]:
    qrels = read_qrels(qrels_path)
    return qrels if qids is None else {q: j for q, j in qrels.items() if q in qids}


def compare_runs(
    kind: str,
    first_dir: Path,
    second_dir: Path,
    *,
    stage: str,
    models: Sequence[str],
    depths: Sequence[int],
    qrels_path: Path,
    first_stage: Path,
    qids: Collection[str] | None = None,
) -> list[dict[str, Any]]:
    """One verdict per (model, depth) whose two run files exist: ``determinism`` or ``dtype``. Each of the
    two runs must reorder the frozen candidates of ``first_stage`` (the stage's first-stage run; the
    reordering invariant, ``analysis.inputs.reordering``): a run that breaks it fails its verdict, named."""
    rule = determinism if kind == "determinism" else dtype_rule
    qrels = restricted_qrels(qrels_path, qids)
    out = []
    for model in models:
        for k in depths:
            a, b = run_path(first_dir, stage, model, k), run_path(second_dir, stage, model, k)
            if not a.is_file() or not b.is_file():  # not checked: named by ``decide``
                continue
            broken = reordering_breaks(first_stage, [(a, k), (b, k)])
            result = rule(ndcg10(a, qrels), ndcg10(b, qrels)).as_dict()
            out.append(
                {
                    "stage": stage,
                    "model": model,
                    "depth": k,
                    "first_run": str(a),
                    "second_run": str(b),
                    "queries": len(qrels),
                    **result,
                    "first_stage": str(first_stage),
                    "reordering_breaks": broken,
                    "passed": bool(result["passed"]) and not broken,
                }
            )
    return out


def reordering_breaks(first_stage: Path, runs: Sequence[tuple[Path, int]]) -> list[str]:
    """The reordering invariant on each run (path, depth): the one-line message of every run that breaks
    it (file, line, query, id, fix), or of a missing first stage; [] when every run holds."""
    broken = []
    for path, k in runs:
        try:
            check_run_files(first_stage, [(path, k)], first_name=str(first_stage))
        except TrecFormatError as exc:
            broken.append(str(exc))
    return broken


def write_verdicts(path: Path, verdicts: list[dict[str, Any]], extra: Mapping[str, Any]) -> None:
    write_json_atomic(path, {**extra, "verdicts": verdicts})


def decide(
    verdicts: Sequence[Mapping[str, Any]], required: Sequence[tuple[str, int]], skipped: Mapping[str, str]
) -> dict[str, Any]:
    """The command's verdict over every required (model, depth): exit 0 only if each was checked and passed.

    ``exit_code`` 1 when a rule failed, when a required model was not checked (not rated, run missing) or
    when nothing was checked at all; ``all_passed`` is never true for an empty or partial check.
    """
    seen = {(str(v["model"]), int(v["depth"])): bool(v["passed"]) for v in verdicts}
    failed = [f"{m}@{k}" for (m, k), ok in seen.items() if not ok]
    not_checked = {
        f"{m}@{k}": skipped.get(m, "no run file in one or both of the runs compared")
        for m, k in required
        if (m, k) not in seen
    }
    if not seen:
        problem = "nothing to check: no required model was checked"
    elif failed:
        problem = f"the plan's rule failed for {', '.join(failed)}"
    elif not_checked:
        problem = f"not checked: {', '.join(not_checked)}"
    else:
        problem = None
    return {
        "all_passed": problem is None,
        "exit_code": 0 if problem is None else 1,
        "problem": problem,
        "failed": failed,
        "not_checked": not_checked,
        "required": [f"{m}@{k}" for m, k in required],
    }


def format_verdicts(verdicts: Sequence[Mapping[str, Any]], decision: Mapping[str, Any]) -> str:
    lines = [
        "| model | depth | first nDCG@10 | second nDCG@10 | diff (points) | limit | passed |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for v in verdicts:
        lines.append(
            f"| {v['model']} | {v['depth']} | {100 * v['first']:.2f} | {100 * v['second']:.2f} | "
            f"{v['difference_points']:.3f} | {v['limit_points']} | {v['passed']} |"
        )
    for v in verdicts:
        lines += [
            f"{v['model']}@{v['depth']}: reordering invariant broken: {m}" for m in v["reordering_breaks"]
        ]
    for name, reason in decision["not_checked"].items():
        lines.append(f"not checked: {name} ({reason})")
    keys = ("all_passed", "failed", "not_checked")
    return "\n".join(lines) + "\n" + json.dumps({k: decision[k] for k in keys}, sort_keys=True)
