"""The pitfalls experiment's comparisons (plan section "Pitfalls experiment").

Two families of their own, never part of the main study's Holm families (``analysis.reporting.study``):

* ``pitfalls/hybrid-71k/@100/vs-a``: the Qwen3-Reranker-0.6B variants (b), (c), (d1), (d2) against (a), the
  model card's correct input, at the main depth 100, from ``<pitfall runs>/hybrid-71k/<run id>@100.trec``
  (``bench quality --pitfalls`` writes them to ``results/pitfalls/runs``); Holm over the four comparisons.
* ``pitfalls/typesense/keyword-plain-71k-vs-keyword-71k``: the first-stage run without locale, stemming and
  stop words against the German settings, from ``<runs>/first-stage/``; one comparison.

Each comparison uses the plan's statistics exactly as the main study does (``analysis.stats.resampling``: 95 %
bootstrap intervals for nDCG@10 and Hit@5, paired randomisation test on nDCG@10, seed 20261009, 10,000
resamples; ``analysis.reporting.wording.word`` for the words). The JSON keeps full precision; the Markdown
rounds. The plan fixes neither the comparison nor the family; these readings are deviation D-032.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from analysis.core.atomic import write_json_atomic
from analysis.core.plan import (
    ALPHA,
    INTERVAL_METRICS,
    MAIN_METRIC,
    PITFALL_REFERENCE,
    PITFALL_RUN_IDS,
    PITFALL_TYPESENSE,
    QUALITY_DEPTH,
)
from analysis.inputs.reordering import check_run_files
from analysis.inputs.trec import read_run_table
from analysis.reporting.wording import word
from analysis.stats.metrics import Judgments, evaluate_table
from analysis.stats.multiple import holm
from analysis.stats.resampling import bootstrap_intervals, paired_differences, randomisation_p_values

__all__ = ["analyse_pitfalls", "markdown"]

PITFALL_STAGE = "hybrid-71k"
LETTERS = dict(zip(PITFALL_RUN_IDS, ("a", "b", "c", "d1", "d2"), strict=True))
DESCRIPTIONS = {
    "a": "correct per the model card",
    "b": "empty instruction",
    "c": "right padding",
    "d1": "max length 256, passage cut (correct)",
    "d2": "max length 256, end of whole input cut (suffix lost)",
}


def _score(path: Path, judgments: Judgments) -> dict[str, Any]:
    table = read_run_table(path, qrels_qids=judgments.qids)
    per_query = evaluate_table(judgments, table)
    return {
        "path": path,
        "sha256": table.sha256,
        "per_query": per_query,
        "means": {m: float(np.mean(v)) for m, v in per_query.items()},
    }


def _family(fid: str, runs: Mapping[str, dict[str, Any]], reference: str) -> dict[str, Any]:
    names = [n for n in runs if n != reference]
    ref = runs[reference]["per_query"][MAIN_METRIC]
    if names:
        d = np.column_stack([paired_differences(runs[n]["per_query"][MAIN_METRIC], ref) for n in names])
        p = randomisation_p_values(d)
        reject, adjusted = holm(p, ALPHA)
    else:
        p, reject, adjusted = np.zeros(0), np.zeros(0, bool), np.zeros(0)
    comparisons = []
    for i, n in enumerate(names):
        diff = runs[n]["means"][MAIN_METRIC] - runs[reference]["means"][MAIN_METRIC]
        comparisons.append(
            {
                "run": n,
                "reference": reference,
                "mean_difference": diff,
                "p_value": float(p[i]),
                "p_holm": float(adjusted[i]),
                "significant": bool(reject[i]),
                "wording": word(diff, float(adjusted[i])),
            }
        )
    return {"id": fid, "reference": reference, "metric": MAIN_METRIC, "comparisons": comparisons}


def _records(runs: Mapping[str, dict[str, Any]], base: Path) -> dict[str, Any]:
    every = list(runs)
    out: dict[str, Any] = {}
    intervals = (
        {
            m: bootstrap_intervals(np.column_stack([runs[n]["per_query"][m] for n in every]))
            for m in INTERVAL_METRICS
        }
        if every
        else {}
    )
    for i, n in enumerate(every):
        r = runs[n]
        out[n] = {
            "run": Path(r["path"]).relative_to(base).as_posix()
            if Path(r["path"]).is_relative_to(base)
            else Path(r["path"]).name,
            "sha256": r["sha256"],
            "means": r["means"],
            "intervals": {m: [float(x) for x in intervals[m][i]] for m in INTERVAL_METRICS},
        }
    return out


def analyse_pitfalls(
    runs_dir: Path, pitfall_runs: Path, qrels: Mapping[str, Mapping[str, int]]
) -> dict[str, Any]:
    """Both families; a family whose runs are missing is recorded as not run, with the reason."""
    judgments = Judgments.from_qrels(qrels)
    out: dict[str, Any] = {"depth": QUALITY_DEPTH, "families": [], "runs": {}, "not_run": {}}
    paths = {rid: pitfall_runs / PITFALL_STAGE / f"{rid}@{QUALITY_DEPTH}.trec" for rid in PITFALL_RUN_IDS}
    present = {rid: p for rid, p in paths.items() if p.is_file()}
    if PITFALL_REFERENCE not in present:
        # relative to --out, so that the file is the same wherever the report is rebuilt (bench reproduce)
        where = f"pitfalls/runs/{PITFALL_STAGE}/{PITFALL_REFERENCE}@{QUALITY_DEPTH}.trec"
        out["not_run"]["qwen3-variants"] = f"no run of variant (a) at {where} (under the report's --out)"
    else:
        first = f"first-stage/{PITFALL_STAGE}.trec"
        check_run_files(runs_dir / first, [(p, QUALITY_DEPTH) for p in present.values()], first_name=first)
        runs = {rid: _score(p, judgments) for rid, p in present.items()}
        out["families"].append(
            _family(f"pitfalls/{PITFALL_STAGE}/@{QUALITY_DEPTH}/vs-a", runs, PITFALL_REFERENCE)
        )
        out["runs"].update(_records(runs, pitfall_runs))
        missing = [rid for rid in PITFALL_RUN_IDS if rid not in present]
        if missing:
            out["not_run"]["qwen3-variants-missing"] = missing
    plain, german = PITFALL_TYPESENSE
    fs = {s: runs_dir / "first-stage" / f"{s}.trec" for s in (plain, german)}
    absent = [f"first-stage/{p.name}" for p in fs.values() if not p.is_file()]  # relative to --runs
    if absent:
        out["not_run"]["typesense"] = f"no first-stage run {', '.join(absent)} in the runs folder"
    else:
        runs = {s: _score(p, judgments) for s, p in fs.items()}
        out["families"].append(_family(f"pitfalls/typesense/{plain}-vs-{german}", runs, german))
        out["runs"].update(_records(runs, runs_dir))
    return out


def _pts(x: float) -> str:
    return f"{100 * x:.1f}"


def markdown(result: Mapping[str, Any]) -> list[str]:
    lines = [
        "## Pitfalls experiment",
        "",
        "Qwen3-Reranker-0.6B on hybrid-71k in five declared variants against (a), and Typesense without "
        "German settings against keyword-71k. Their own comparison families (Holm within each), never "
        "mixed into the main study's families; same intervals, test and wording as above.",
        "",
    ]
    for key, reason in result["not_run"].items():
        lines.append(f"- not run ({key}): {reason}")
    if result["not_run"]:
        lines.append("")
    for fam in result["families"]:
        lines += [
            f"`{fam['id']}`",
            "",
            "| run | nDCG@10 | 95 % CI | Hit@5 | Δ reference | p Holm | vs reference |",
            "|---|" + "---:|" * 6,
        ]
        comps = {c["run"]: c for c in fam["comparisons"]}
        for name in [fam["reference"], *comps]:
            r = result["runs"][name]
            label = f"({LETTERS[name]}) {DESCRIPTIONS[LETTERS[name]]}" if name in LETTERS else name
            lo, hi = r["intervals"][MAIN_METRIC]
            c = comps.get(name)
            tail = (
                ["", "", "reference"]
                if c is None
                else [f"{100 * c['mean_difference']:+.1f}", f"{c['p_holm']:.4f}", c["wording"]]
            )
            lines.append(
                "| "
                + " | ".join(
                    [
                        label,
                        _pts(r["means"][MAIN_METRIC]),
                        f"[{_pts(lo)}, {_pts(hi)}]",
                        _pts(r["means"]["hit@5"]),
                        *tail,
                    ]
                )
                + " |"
            )
        lines.append("")
    return lines


def report_section(
    runs_dir: Path, qrels: Mapping[str, Mapping[str, int]], out_dir: Path, build_dir: Path | None = None
) -> list[str]:
    """``analysis report`` hook: when pitfall runs (``<out>/pitfalls/runs``) or both Typesense first-stage
    runs exist, write ``pitfalls.json`` (into ``build_dir``, the report's temporary folder swapped into
    ``<out>`` whole, else ``out_dir``) and return the Markdown section. The runs are read from ``out_dir``."""
    pitfall_runs = Path(out_dir) / "pitfalls" / "runs"
    firsts = [Path(runs_dir) / "first-stage" / f"{s}.trec" for s in PITFALL_TYPESENSE]
    if not pitfall_runs.is_dir() and not all(p.is_file() for p in firsts):
        return []
    result = analyse_pitfalls(Path(runs_dir), pitfall_runs, qrels)
    write_json_atomic(Path(build_dir or out_dir) / "pitfalls.json", result)
    return markdown(result)
