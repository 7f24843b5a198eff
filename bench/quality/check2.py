"""Plan check 2 inside ``bench quality`` (section "Adapter checks"): our nDCG@10 equals pytrec_eval
``ndcg_cut_10`` within 0.0001 on the real runs the session wrote.

Every run file of the session is compared through
``analysis.reporting.pytrec_check.compare_with_pytrec_eval`` (the
one comparison, shared with ``analysis report``); the verdicts go into the study manifest (``check2``) and
the command exits 1 if any run fails or pytrec_eval cannot run: a check that did not run never passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.inputs.trec import read_qrels, read_run
from analysis.reporting.pytrec_check import compare_with_pytrec_eval
from bench.quality.runs import RunFileInfo
from bench.quality.study import Study


def check_runs(runs: Sequence[RunFileInfo], qrels_path: Path) -> dict[str, Any]:
    """``{"passed": bool, "runs": [...], "error": str | None}`` over every written run file."""
    qrels = read_qrels(qrels_path)
    out: list[dict[str, Any]] = []
    try:
        for info in runs:
            if info.path is None:
                continue
            run = read_run(info.path, allow_unknown_queries=True)
            result = compare_with_pytrec_eval(qrels, {q: rows for q, rows in run.items() if q in qrels})
            out.append(
                {
                    "run": str(info.path),
                    "stage": info.stage,
                    "model": info.model,
                    "depth": info.depth,
                    **result.as_dict(),
                }
            )
    except (ImportError, RuntimeError) as exc:  # pytrec_eval missing: the check did not run
        return {"passed": False, "runs": out, "error": f"{type(exc).__name__}: {exc}"}
    if not out:
        return {"passed": False, "runs": [], "error": "no run file was written, nothing to compare"}
    verdicts = {r["verdict"] for r in out}
    overall = "FAIL" if "FAIL" in verdicts else "NOT COMPARED" if "NOT COMPARED" in verdicts else "PASS"
    return {"passed": overall == "PASS", "verdict": overall, "runs": out, "error": None}


def summary(result: dict[str, Any]) -> str:
    """The word the command prints: passed, FAILED, or NOT COMPARED with the runs no query of which could be
    compared in pytrec_eval's own order (every query tied; never "passed" for those)."""
    if result["passed"]:
        return "passed"
    if result.get("verdict") != "NOT COMPARED":
        return "FAILED"
    names = [
        f"{r['stage']}/{r['model']}@{r['depth']}" for r in result["runs"] if r["verdict"] == "NOT COMPARED"
    ]
    return (
        "NOT COMPARED: equal to pytrec_eval in rank order, but not compared in pytrec_eval's own order "
        f"(every query has tied scores) for {', '.join(names)}"
    )


def failures(result: dict[str, Any]) -> str | None:
    """The message to exit 1 with, or None when check 2 found no difference on any run (a run NOT COMPARED in
    pytrec_eval's own order is said by ``summary``, and recorded with ``passed`` false, but ends nothing)."""
    if result["error"] is not None:
        return f"plan check 2 (nDCG@10 against pytrec_eval) did not run: {result['error']}"
    bad = [
        f"{r['stage']}/{r['model']}@{r['depth']} (max diff {r['max_abs_diff']:.2e})"
        for r in result["runs"]
        if r["verdict"] == "FAIL"
    ]
    if bad:
        return f"plan check 2 failed (nDCG@10 differs from pytrec_eval by more than 1e-4): {', '.join(bad)}"
    return None


def record_check(
    study: Study, runs: Sequence[RunFileInfo], qrels_path: Path
) -> tuple[dict[str, Any], str | None]:
    """Run check 2 on ``runs``, store it in the study manifest (``check2``); (result, failure message)."""
    result = check_runs(runs, qrels_path)
    study.manifest["check2"] = result
    study.save()
    return result, failures(result)
