"""int8 against fp32 (plan section "OpenVINO int8 variant": "Quality measured on the desktop (305 queries,
hybrid-71k, k = 100) against the fp32 model").

Its own comparison family of one comparison, outside the main study's Holm families:
``analysis.reporting.study``
leaves the variant's run files out of its stages (``SEPARATE_MODELS``) and this module reads them. Numbers:
nDCG@10 of both with the plan's 95 % bootstrap percentile intervals (10,000 resamples over queries, seed
20261009; the same resamples for both runs, so the interval of the difference is paired too), the plan's
paired randomisation test (10,000 sign flips, seed 20261009; one comparison, no Holm), and the plan's
wording. Beside the plan's check, what users of int8 rerankers ask first: per-query Spearman of the int8
scores against the fp32 scores of the same candidates (mean, minimum, queries below 0.99) and the top-10
overlap, both read from the run files' scores.

The reference is not fp32 (D-038): the plan says "against the fp32 model", but the run the study has for
bge-v2-m3 on hybrid-71k, ``runs/hybrid-71k/bge-v2-m3@100.trec``, is the quality phase's, made on the desktop
GPU in the vendor's dtype (float16, ``bench.rerankers.base.VENDOR_DTYPE``). The section and its record name
that reference as it is (``REFERENCE``) and never call it fp32; the plan's data type check (bench
dtype-check: desktop CPU fp32 against the GPU on 20 queries, < 0.5 nDCG@10 points) is what ties it to fp32.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Final

import numpy as np

from analysis.core.plan import (
    BOOTSTRAP_RESAMPLES,
    CONFIDENCE,
    INT8_FP32_MODEL,
    INT8_MODEL,
    INT8_QUALITY_DEPTH,
    INT8_QUALITY_STAGE,
    MAIN_METRIC,
    RANDOMISATION_RESAMPLES,
    SEED,
)
from analysis.inputs.reordering import check_run_files
from analysis.inputs.trec import read_qrels, read_run
from analysis.reporting.wording import word
from analysis.stats.metrics import evaluate
from analysis.stats.resampling import (
    bootstrap_means,
    paired_differences,
    percentile_interval,
    randomisation_p_values,
)

FP32_MODEL: Final = INT8_FP32_MODEL
STAGE: Final = INT8_QUALITY_STAGE
DEPTH: Final = INT8_QUALITY_DEPTH
SEPARATE_MODELS: Final = (INT8_MODEL,)  # never in the main study's comparison families
# what the reference run is (D-038); a test checks the dtype against bench's vendor dtype for bge-v2-m3
REFERENCE_DTYPE: Final = "float16"
REFERENCE: Final = {
    "model": FP32_MODEL,
    "dtype": REFERENCE_DTYPE,
    "device": "desktop GPU (the quality phase's run)",
    "plan_names": "fp32",
    "deviation": "D-038",
}
LABEL: Final = f"{FP32_MODEL}, GPU {REFERENCE_DTYPE}"
FAMILY: Final = f"int8/vs-{FP32_MODEL} (GPU {REFERENCE_DTYPE} run; own family of one comparison, no Holm)"


def run_path(runs_dir: Path, model: str, stage: str = STAGE, depth: int = DEPTH) -> Path:
    return runs_dir / stage / f"{model}@{depth}.trec"


def _ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, the average rank ``(i + j) / 2 + 1`` for a tie over sorted positions i..j (NaN ties
    nothing, as ``==`` says)."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    if not len(values):
        return ranks
    sorted_v = values[order]
    starts = np.flatnonzero(np.r_[True, sorted_v[1:] != sorted_v[:-1]])
    ends = np.r_[starts[1:], len(values)] - 1
    ranks[order] = np.repeat((starts + ends) / 2.0 + 1.0, ends - starts + 1)
    return ranks


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho with average ranks for ties (as scipy.stats.spearmanr); NaN if a side is constant."""
    ra, rb = _ranks(np.asarray(a, dtype=np.float64)), _ranks(np.asarray(b, dtype=np.float64))
    da, db = ra - ra.mean(), rb - rb.mean()
    denom = math.sqrt(float(da @ da) * float(db @ db))
    return float(da @ db) / denom if denom > 0 else math.nan


def agreement(
    fp32: dict[str, list[tuple[str, float]]], int8: dict[str, list[tuple[str, float]]]
) -> dict[str, Any]:
    """Per-query Spearman over the candidates both runs scored, and top-10 overlap."""
    per_query: dict[str, Any] = {}
    for qid in sorted(set(fp32) & set(int8)):
        a, b = dict(fp32[qid]), dict(int8[qid])
        common = sorted(set(a) & set(b))
        rho = (
            spearman(np.array([a[d] for d in common]), np.array([b[d] for d in common]))
            if len(common) > 1
            else math.nan
        )
        top = len({d for d, _ in fp32[qid][:10]} & {d for d, _ in int8[qid][:10]})
        per_query[qid] = {"spearman": rho, "candidates": len(common), "top10_overlap": top}
    rhos = [v["spearman"] for v in per_query.values() if not math.isnan(v["spearman"])]
    return {
        "queries": len(per_query),
        "only_in_one_run": sorted(set(fp32) ^ set(int8)),
        "spearman_mean": float(np.mean(rhos)) if rhos else None,
        "spearman_min": min(rhos) if rhos else None,
        "below_0.99": [q for q, v in per_query.items() if not v["spearman"] >= 0.99],
        "top10_overlap_mean": float(np.mean([v["top10_overlap"] for v in per_query.values()]))
        if per_query
        else None,
        "per_query": per_query,
    }


#: the verdict of ``bench int8 agreement --against`` (bench.int8.agreement: VERDICT, VERDICT_FORMAT), read
#: here without importing bench: the plan's gate "int8 scores on the server must match the desktop
#: (Spearman >= 0.99 on 20 queries)"
GATE_FILE: Final = Path("results") / "int8" / "agreement.json"
GATE_FORMAT: Final = "int8-agreement/1"


def int8_gate(path: Path, shown: str | None = None) -> dict[str, Any]:
    """The plan's int8 gate as the report shows it beside the int8 numbers: ``status`` "passed", "FAILED" or
    "not run" (no verdict file yet, or one that is not a verdict), with the file and, from a verdict, the
    minimum per-query Spearman and the queries below 0.99. What a FAILED gate means for the published
    numbers: docs/runbook.md, step 13 (D-048, "int8 agreement gate missed")."""
    rule = (
        "Spearman >= 0.99 on every one of 20 queries, the server's int8 scores against the desktop's "
        "(plan section Latency)"
    )
    # the file as the record names it: the same whatever the working folder (the audit recomputes it)
    record: dict[str, Any] = {"file": shown or str(path), "rule": rule}
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        return {**record, "status": "not run", "reason": "no agreement verdict yet"}
    except (OSError, ValueError) as exc:
        return {**record, "status": "not run", "reason": f"unreadable ({type(exc).__name__})"}
    verdict = isinstance(data, dict) and data.get("format") == GATE_FORMAT
    if not verdict or type(data.get("passed")) is not bool:
        return {**record, "status": "not run", "reason": f"not an int8 agreement verdict ({GATE_FORMAT})"}
    return {
        **record,
        "status": "passed" if data["passed"] else "FAILED",
        "min_spearman": data.get("min_spearman"),
        "failed_queries": list(data.get("failed") or []),
        "against": (data.get("against") or {}).get("file"),
    }


def gate_line(gate: dict[str, Any]) -> str:
    """One line of the int8 section: the gate's result."""
    head = f"The plan's int8 gate ({gate['rule']}; `{gate['file']}`): "
    if gate["status"] == "not run":
        return head + f"NOT RUN ({gate['reason']}); the int8 numbers above are the desktop's only."
    low = gate.get("min_spearman")
    low_text = f"{low:.4f}" if isinstance(low, int | float) else "n/a"
    if gate["status"] == "passed":
        return head + f"PASSED (minimum per-query Spearman {low_text})."
    named = ", ".join(map(str, gate["failed_queries"])) or "none named"
    return head + (
        f"**FAILED** (minimum per-query Spearman {low_text}; below 0.99 or not comparable: {named}). The "
        "int8 numbers above hold for the desktop's instruction set only; the server's int8 latency is not "
        "published (D-039; runbook step 13)."
    )


def compare_int8(
    runs_dir: Path, qrels_path: Path, *, stage: str = STAGE, depth: int = DEPTH, gate: Path | None = None
) -> dict[str, Any] | None:
    """The comparison record, or None when the int8 run does not exist (not measured). ``gate``: the agreement
    verdict (default ``GATE_FILE`` beside the runs folder, in the checkout's ``results``)."""
    p_int8, p_fp32 = (
        run_path(runs_dir, INT8_MODEL, stage, depth),
        run_path(runs_dir, FP32_MODEL, stage, depth),
    )
    if not p_int8.is_file():
        return None
    default = (runs_dir.parent / GATE_FILE, GATE_FILE.as_posix())
    gate_record = int8_gate(gate) if gate is not None else int8_gate(*default)
    qrels = read_qrels(qrels_path)
    if not p_fp32.is_file():
        return {
            "stage": stage,
            "depth": depth,
            "status": "not compared",
            "reason": f"{p_fp32.relative_to(runs_dir)} missing (the reference run: {LABEL})",
            "gate": gate_record,
        }
    check_run_files(
        runs_dir / "first-stage" / f"{stage}.trec", [(p_int8, depth)], first_name=f"first-stage/{stage}.trec"
    )  # the fp32 run is checked with its stage
    runs = {m: read_run(p, qrels_qids=qrels) for m, p in ((FP32_MODEL, p_fp32), (INT8_MODEL, p_int8))}
    scores = {m: evaluate(qrels, run, measures=[MAIN_METRIC])[MAIN_METRIC] for m, run in runs.items()}
    qids = sorted(qrels)
    matrix = np.array([[scores[FP32_MODEL][q], scores[INT8_MODEL][q]] for q in qids], dtype=np.float64)
    boot = bootstrap_means(matrix, BOOTSTRAP_RESAMPLES, SEED)  # same resamples for both columns
    ci = percentile_interval(boot, CONFIDENCE).T
    diff_ci = percentile_interval(boot[:, 1] - boot[:, 0], CONFIDENCE)
    p = float(
        randomisation_p_values(
            paired_differences(matrix[:, 1], matrix[:, 0]), resamples=RANDOMISATION_RESAMPLES, seed=SEED
        )
    )
    mean_diff = float(matrix[:, 1].mean() - matrix[:, 0].mean())
    return {
        "stage": stage,
        "depth": depth,
        "status": "compared",
        "family": FAMILY,
        "queries": len(qids),
        "metric": MAIN_METRIC,
        "runs": {m: str(run_path(Path(), m, stage, depth)) for m in runs},
        "reference": {**REFERENCE, "run": str(run_path(Path(), FP32_MODEL, stage, depth))},
        "mean": {FP32_MODEL: float(matrix[:, 0].mean()), INT8_MODEL: float(matrix[:, 1].mean())},
        "interval": {FP32_MODEL: [float(x) for x in ci[0]], INT8_MODEL: [float(x) for x in ci[1]]},
        "mean_difference_int8_minus_reference": mean_diff,
        "difference_interval": [float(x) for x in diff_ci],
        "p_value": p,
        "wording_int8_vs_reference": word(mean_diff, p),
        "settings": {
            "seed": SEED,
            "bootstrap_resamples": BOOTSTRAP_RESAMPLES,
            "randomisation_resamples": RANDOMISATION_RESAMPLES,
            "confidence": CONFIDENCE,
        },
        "agreement_with_reference": agreement(runs[FP32_MODEL], runs[INT8_MODEL]),
        "gate": gate_record,
    }


def markdown(rec: dict[str, Any] | None) -> list[str]:
    """The report section (empty when there is no int8 run)."""
    if rec is None:
        return []
    head = f"## OpenVINO int8 against {LABEL} ({rec['stage']}, k = {rec['depth']})"
    if rec["status"] != "compared":
        return [head, "", f"Not compared: {rec['reason']}.", "", gate_line(rec["gate"]), ""]
    m, ci, a = rec["mean"], rec["interval"], rec["agreement_with_reference"]

    def pts(x: float) -> str:
        return f"{100 * x:.1f}"

    def span(model: str) -> str:
        return f"{pts(ci[model][0])}-{pts(ci[model][1])}"

    return [
        head,
        "",
        f"Own comparison, not part of the main study's Holm families; {rec['queries']} queries, nDCG@10 in "
        "points, 95 % bootstrap intervals and a paired randomisation test (p, no Holm), the plan's settings. "
        f"The reference is the quality phase's {FP32_MODEL} run (desktop GPU, {REFERENCE_DTYPE}), not an "
        "fp32 run as the plan names (D-038); the data type check ties the GPU value to CPU fp32.",
        "",
        "| model | nDCG@10 | 95 % interval |",
        "|---|---:|---:|",
        f"| {FP32_MODEL} (GPU, {REFERENCE_DTYPE}) | {pts(m[FP32_MODEL])} | {span(FP32_MODEL)} |",
        f"| {INT8_MODEL} | {pts(m[INT8_MODEL])} | {span(INT8_MODEL)} |",
        "",
        f"int8 - {REFERENCE_DTYPE}: {100 * rec['mean_difference_int8_minus_reference']:+.2f} points (95 % "
        f"interval {100 * rec['difference_interval'][0]:+.2f} to "
        f"{100 * rec['difference_interval'][1]:+.2f}), "
        f"p = {rec['p_value']:.4f}: int8 is {rec['wording_int8_vs_reference']} relative to {LABEL}.",
        f"Agreement with {LABEL} on the same candidates: per-query Spearman mean {a['spearman_mean']:.4f}, "
        f"minimum {a['spearman_min']:.4f} ({len(a['below_0.99'])} queries below 0.99); top-10 overlap mean "
        f"{a['top10_overlap_mean']:.2f} of 10.",
        "",
        gate_line(rec["gate"]),
        "",
    ]
