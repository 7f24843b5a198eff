"""``analysis report``: the quality tables of the plan (section "Quality") from run files and qrels.

Writes ``<out>/quality/<stage>.json`` (one per stage) and ``<out>/quality/study.json`` (settings, inputs,
winners): ids and numbers only, full precision, sorted keys, no timestamps, so a rerun on the same inputs is
byte-identical. ``<out>/report.md`` has one table per stage and ``<out>/figures/<stage>.png`` one figure per
stage. Nothing here compares numbers of different stages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from analysis.atomic import write_bytes_atomic
from analysis.metrics import MISSING_QUERY_POLICY
from analysis.plan import (
    ALPHA,
    BOOTSTRAP_RESAMPLES,
    CLEARLY_BETTER_POINTS,
    CONFIDENCE,
    MAIN_METRIC,
    RANDOMISATION_RESAMPLES,
    SEED,
)
from analysis.ranking import TIE_RULE
from analysis.resampling import BOOTSTRAP_PROCEDURE, P_VALUE_CONVENTION, RNG_ALGORITHM
from analysis.study import RunResult, StageResult, analyse_study, default_flags
from analysis.wording import HIT_RATE_NOTE, WORSE_WORDING_NOTE, corpus_of, winner_sentence

__all__ = ["SETTINGS", "write_report"]

SETTINGS: dict[str, Any] = {
    "seed": SEED,
    "bootstrap_resamples": BOOTSTRAP_RESAMPLES,
    "randomisation_resamples": RANDOMISATION_RESAMPLES,
    "confidence": CONFIDENCE,
    "alpha": ALPHA,
    "rng": RNG_ALGORITHM,
    "bootstrap_procedure": BOOTSTRAP_PROCEDURE,
    "p_value_convention": P_VALUE_CONVENTION,
    "multiple_comparisons": "Holm step-down per stage, depth and comparison family (vs-first-stage, vs-best)",
    "best_model": "highest mean nDCG@10 among the stage's runs at that depth; ties: smallest model id",
    "clearly_better_points": CLEARLY_BETTER_POINTS,
    "worse_wording": WORSE_WORDING_NOTE,
    "tie_rule": TIE_RULE,
    "missing_query_policy": MISSING_QUERY_POLICY,
    "hit_rates": HIT_RATE_NOTE,
    "main_metric": MAIN_METRIC,
}


def _dump(obj: Any) -> bytes:
    return (json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=True, allow_nan=False) + "\n").encode()


def _run_record(r: RunResult, flags: Mapping[str, str]) -> dict[str, Any]:
    return {
        "model": r.model, "depth": r.depth, "run": r.path, "sha256": r.sha256, "means": r.means,
        "intervals": r.intervals, "flagged": r.model in flags, "flag_note": flags.get(r.model or ""),
    }


def stage_record(s: StageResult, flags: Mapping[str, str]) -> dict[str, Any]:
    return {
        "stage": s.stage, "corpus": corpus_of(s.stage),
        "first_stage": _run_record(s.first_stage, flags),
        "runs": [_run_record(r, flags) for r in s.runs],
        "families": s.families,
        "best": {str(k): v for k, v in s.best.items()},
        "winner": {str(k): (s.best[k] if v else None) for k, v in s.winner.items()},
    }


def _pts(x: float) -> str:
    return f"{100 * x:.1f}"


def _ci(r: RunResult, metric: str) -> str:
    lo, hi = r.intervals[metric]
    return f"[{_pts(lo)}, {_pts(hi)}]"


def _p(x: float) -> str:
    return f"{x:.4f}" if x >= 0.0001 else f"{x:.1e}"


def _stage_markdown(s: StageResult, flags: Mapping[str, str]) -> list[str]:
    f = s.first_stage
    lines = [f"## {s.stage} (corpus {corpus_of(s.stage)})", "",
             f"First stage: Recall@100 {_pts(f.means['recall@100'])}, ceiling (nDCG@10 of a perfect "
             f"reordering of the top 100) {_pts(f.means['ceiling'])}.", ""]
    comparisons: dict[tuple[str, str | None, int | None], dict[str, Any]] = {}
    for fam in s.families:
        kind = fam["id"].rsplit("/", 1)[1]
        for c in fam["comparisons"]:
            comparisons[(kind, c["model"], c["depth"])] = c
    lines += [
        "| run | nDCG@10 | 95 % CI | nDCG'@10 | Hit@5 ≥ | 95 % CI | Hit@10 ≥ | R@5 | R@10 | R@20 | MRR@10 "
        "| judged@10 | Δ first stage | p Holm | vs first stage | Δ best | p Holm | vs best |",
        "|---|" + "---:|" * 17,
    ]

    def row(r: RunResult) -> str:
        m = r.means
        name = "first stage" if r.model is None else f"{r.model}{'†' if r.model in flags else ''}@{r.depth}"
        cells = [name, _pts(m["ndcg@10"]), _ci(r, "ndcg@10"), _pts(m["ndcg'@10"]), _pts(m["hit@5"]),
                 _ci(r, "hit@5"), _pts(m["hit@10"]), _pts(m["recall@5"]), _pts(m["recall@10"]),
                 _pts(m["recall@20"]), _pts(m["mrr@10"]), _pts(m["judged@10"])]
        for kind in ("vs-first-stage", "vs-best"):
            c = comparisons.get((kind, r.model, r.depth))
            if c is None:
                cells += ["", "", "best" if kind == "vs-best" and r.model is not None else ""]
            else:
                cells += [f"{100 * c['mean_difference']:+.1f}", _p(c["p_holm"]), c["wording"]]
        return "| " + " | ".join(cells) + " |"

    lines.append(row(f))
    lines += [row(r) for r in s.runs]
    lines.append("")
    for depth in sorted(s.best, reverse=True):
        best = s.best[depth]
        sentence = winner_sentence(s.stage, depth, best, s.winner[depth])
        if s.winner[depth] and best in flags and "Note:" not in sentence:
            sentence += f" Note: {best} is contamination-flagged ({flags[best]})."
        lines.append(f"- {sentence}")
    lines.append("")
    return lines


def write_report(
    runs_dir: Path,
    qrels_path: Path,
    out_dir: Path,
    *,
    title: str | None = None,
    header_lines: Sequence[str] = (),
    flags: Mapping[str, str] | None = None,
    figures: bool = True,
    latency_dir: Path | None = None,
) -> Path:
    """Analyse the runs under ``runs_dir`` and write JSON, Markdown and figures; returns report.md's path.

    ``flags`` (model id -> note) is added to the plan's contamination flags.
    """
    runs_dir, qrels_path, out_dir = Path(runs_dir), Path(qrels_path), Path(out_dir)
    all_flags = {**default_flags(), **(flags or {})}
    stages, inputs = analyse_study(runs_dir, qrels_path)
    records = {s.stage: stage_record(s, all_flags) for s in stages}
    for stage, rec in records.items():
        write_bytes_atomic(out_dir / "quality" / f"{stage}.json", _dump(rec))
    study = {"settings": SETTINGS, "inputs": inputs, "stages": sorted(records),
             "flags": {m: all_flags[m] for m in sorted(all_flags)},
             "winners": {s: r["winner"] for s, r in records.items()}}
    write_bytes_atomic(out_dir / "quality" / "study.json", _dump(study))

    md = [f"# {title or 'Quality of German rerankers on MIRACL-de'}", "", *header_lines]
    if header_lines:
        md.append("")
    md += [
        f"{inputs['queries']} queries (every qrels query; a query missing from a run scores 0). nDCG@10 and "
        "the other metrics in points (x 100). 95 % bootstrap percentile intervals "
        f"({BOOTSTRAP_RESAMPLES:,} resamples over queries, seed {SEED}); paired randomisation test "
        f"({RANDOMISATION_RESAMPLES:,} sign flips, seed {SEED}) on nDCG@10; Holm per stage, depth and "
        "family; "
        f"alpha {ALPHA}. Wording: clearly better = significant and >= {CLEARLY_BETTER_POINTS} points; "
        "measurably better = significant, smaller; otherwise on par. " + WORSE_WORDING_NOTE, "",
        f"{HIT_RATE_NOTE} Numbers of different stages are never compared: the corpora and candidates differ.",
        "",
        "The comparisons against the best model follow the plan, but the best model is picked on the same "
        "queries, so that family's error rate under the null exceeds alpha (`analysis simulate` measures "
        "it); the family against the first stage is not affected.",
        "",
    ]
    if any(m in all_flags for s in stages for m in {r.model for r in s.runs}):
        md.append("† contamination-flagged: " + "; ".join(
            f"{m}: {n}" for m, n in sorted(all_flags.items())
            if any(r.model == m for s in stages for r in s.runs)))
        md.append("")
    for s in stages:
        md += _stage_markdown(s, all_flags)
        if figures:
            md += [f"![nDCG@10 at {s.stage}](figures/{s.stage}.png)", ""]
    if figures:
        from analysis.figures import stage_figure  # matplotlib only when figures are wanted

        for s in stages:
            stage_figure(s, out_dir / "figures" / f"{s.stage}.png", all_flags)
    if latency_dir is not None:
        from analysis.latency.report import latency_section

        md += latency_section(latency_dir, out_dir, figures=figures)
    from analysis.int8.comparison import compare_int8
    from analysis.int8.comparison import markdown as int8_markdown

    int8 = compare_int8(runs_dir, qrels_path)  # None without an int8 run; own family, not in the Holm ones
    if int8 is not None:
        write_bytes_atomic(out_dir / "int8" / "quality.json", _dump(int8))
        md += int8_markdown(int8)
    report = out_dir / "report.md"
    write_bytes_atomic(report, ("\n".join(md).rstrip() + "\n").encode("utf-8"))
    return report
