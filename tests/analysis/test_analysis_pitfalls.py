"""analysis.reporting.pitfalls: the Qwen3 variants against (a) and keyword-plain-71k against keyword-71k as
their own families (never in the main study's), with the plan's statistics; the report hook."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from analysis.core.plan import PITFALL_REFERENCE, PITFALL_RUN_IDS
from analysis.inputs.trec import read_qrels, read_run_table, write_run
from analysis.reporting.pitfalls import analyse_pitfalls
from analysis.reporting.report import write_report
from analysis.stats.metrics import Judgments, evaluate_table
from analysis.stats.multiple import holm
from analysis.stats.resampling import paired_differences, randomisation_p_values

QUERIES = [f"q{i:02d}" for i in range(30)]


def _run(order: str) -> dict[str, list[tuple[str, float]]]:
    """Per query 10 passages; the relevant ``<q>#rel`` at rank 1 ("good"), 6 ("bad") or alternating."""
    out = {}
    for i, q in enumerate(QUERIES):
        docs = [f"{q}#{j}" for j in range(9)]
        pos = {"good": 0, "bad": 5, "mixed": 0 if i % 2 else 5, "mostly": 0 if i % 5 else 1}[order]
        docs.insert(pos, f"{q}#rel")
        out[q] = [(d, float(10 - r)) for r, d in enumerate(docs)]
    return out


def layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("".join(f"{q}\t0\t{q}#rel\t1\n{q}\t0\t{q}#0\t0\n" for q in QUERIES), encoding="utf-8")
    runs = tmp_path / "runs"
    for stage, order in (("keyword-71k", "good"), ("keyword-plain-71k", "bad"), ("hybrid-71k", "mixed")):
        write_run(runs / "first-stage" / f"{stage}.trec", _run(order), tag=f"{stage}/first-stage")
    write_run(runs / "hybrid-71k" / "bge-v2-m3@100.trec", _run("good"), tag="hybrid-71k/bge-v2-m3@100")
    out = tmp_path / "results"
    orders = dict(zip(PITFALL_RUN_IDS, ("good", "good", "mostly", "good", "bad"), strict=True))
    for rid, order in orders.items():
        write_run(
            out / "pitfalls" / "runs" / "hybrid-71k" / f"{rid}@100.trec",
            _run(order),
            tag=f"hybrid-71k/{rid}@100",
        )
    return runs, out, qrels


def test_families_and_statistics(tmp_path: Path) -> None:
    runs, out, qrels = layout(tmp_path)
    result = analyse_pitfalls(runs, out / "pitfalls" / "runs", read_qrels(qrels))
    fams = {f["id"]: f for f in result["families"]}
    assert set(fams) == {
        "pitfalls/hybrid-71k/@100/vs-a",
        "pitfalls/typesense/keyword-plain-71k-vs-keyword-71k",
    }
    qwen = fams["pitfalls/hybrid-71k/@100/vs-a"]
    assert qwen["reference"] == PITFALL_REFERENCE and [c["run"] for c in qwen["comparisons"]] == list(
        PITFALL_RUN_IDS[1:]
    )
    comps = {c["run"]: c for c in qwen["comparisons"]}
    assert comps[PITFALL_RUN_IDS[1]]["p_value"] == 1.0 and comps[PITFALL_RUN_IDS[1]]["wording"] == "on par"
    d2 = comps[PITFALL_RUN_IDS[4]]
    assert d2["wording"] == "clearly worse" and d2["mean_difference"] < -0.5
    # the same numbers by hand: per-query nDCG@10, sign flips, Holm over the four comparisons
    judgments = Judgments.from_qrels(read_qrels(qrels))
    base = out / "pitfalls" / "runs" / "hybrid-71k"
    vals = {
        rid: evaluate_table(judgments, read_run_table(base / f"{rid}@100.trec"))["ndcg@10"]
        for rid in PITFALL_RUN_IDS
    }
    d = np.column_stack([paired_differences(vals[r], vals[PITFALL_REFERENCE]) for r in PITFALL_RUN_IDS[1:]])
    p = randomisation_p_values(d)
    _, adjusted = holm(p)
    assert [c["p_value"] for c in qwen["comparisons"]] == p.tolist()
    assert [c["p_holm"] for c in qwen["comparisons"]] == adjusted.tolist()
    ts = fams["pitfalls/typesense/keyword-plain-71k-vs-keyword-71k"]["comparisons"]
    assert len(ts) == 1 and ts[0]["run"] == "keyword-plain-71k" and ts[0]["wording"] == "clearly worse"
    lo, hi = result["runs"][PITFALL_REFERENCE]["intervals"]["ndcg@10"]
    assert lo <= result["runs"][PITFALL_REFERENCE]["means"]["ndcg@10"] <= hi


def test_report_keeps_pitfalls_out_of_the_main_families(tmp_path: Path) -> None:
    runs, out, qrels = layout(tmp_path)
    report = write_report(runs, qrels, out, figures=False)
    study = json.loads((out / "quality" / "hybrid-71k.json").read_text())
    models = {c["model"] for f in study["families"] for c in f["comparisons"]}
    assert models == {"bge-v2-m3"} and not any("pitfall" in f["id"] for f in study["families"])
    md = report.read_text(encoding="utf-8")
    assert "## Pitfalls experiment" in md and "(d2) max length 256, end of whole input cut" in md
    saved = json.loads((out / "pitfalls.json").read_text())
    assert len(saved["families"]) == 2 and saved["not_run"] == {}
    # byte-identical on a rerun
    first = (out / "pitfalls.json").read_bytes()
    write_report(runs, qrels, out, figures=False)
    assert (out / "pitfalls.json").read_bytes() == first


def test_missing_runs_are_named(tmp_path: Path) -> None:
    runs, out, qrels = layout(tmp_path)
    (out / "pitfalls" / "runs" / "hybrid-71k" / f"{PITFALL_REFERENCE}@100.trec").unlink()
    (runs / "first-stage" / "keyword-plain-71k.trec").unlink()
    result = analyse_pitfalls(runs, out / "pitfalls" / "runs", read_qrels(qrels))
    assert result["families"] == [] and "variant (a)" in result["not_run"]["qwen3-variants"]
    assert "keyword-plain-71k.trec" in result["not_run"]["typesense"]
