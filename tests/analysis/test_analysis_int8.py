"""The report's int8 comparison: own family (not in the Holm families), the plan's interval and paired
test, agreement with fp32 from the run files' scores; checked against scipy and the exact sign-flip test."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analysis.inputs.trec import write_run
from analysis.int8.comparison import compare_int8
from analysis.reporting.report import write_report
from analysis.stats.metrics import evaluate
from analysis.stats.resampling import paired_differences, randomisation_p_exact

N_Q, N_D = 12, 30


def _layout(tmp_path: Path, *, int8_noise: float) -> tuple[Path, Path, dict]:
    rng = np.random.default_rng(1)
    qrels = {f"q{q}": {f"d{q}-{d}": int(d % 7 == 0) for d in range(N_D)} for q in range(N_Q)}
    qrels_path = tmp_path / "qrels.tsv"
    qrels_path.write_text("".join(f"{q}\t0\t{d}\t{r}\n" for q, ds in qrels.items() for d, r in ds.items()))
    runs = tmp_path / "runs"
    first = {q: [(f"d{q[1:]}-{d}", float(N_D - d)) for d in range(N_D)] for q in qrels}
    fp32 = {q: sorted(((d, float(rng.normal())) for d, _ in first[q]), key=lambda x: -x[1]) for q in qrels}
    int8 = {
        q: sorted(((d, s + float(rng.normal(0, int8_noise))) for d, s in fp32[q]), key=lambda x: -x[1])
        for q in qrels
    }
    write_run(runs / "first-stage" / "hybrid-71k.trec", first, "hybrid-71k")
    write_run(runs / "hybrid-71k" / "bge-v2-m3@100.trec", fp32, "hybrid-71k/bge-v2-m3@100")
    write_run(runs / "hybrid-71k" / "bge-v2-m3-int8@100.trec", int8, "hybrid-71k/bge-v2-m3-int8@100")
    return runs, qrels_path, {"fp32": fp32, "int8": int8, "qrels": qrels}


def test_identical_scores_are_on_par_with_p_one(tmp_path: Path) -> None:
    runs, qrels, _ = _layout(tmp_path, int8_noise=0.0)
    rec = compare_int8(runs, qrels)
    assert rec is not None and rec["status"] == "compared"
    assert rec["p_value"] == 1.0 and rec["wording_int8_vs_reference"] == "on par"
    assert rec["agreement_with_reference"]["spearman_min"] == pytest.approx(1.0)
    assert rec["agreement_with_reference"]["top10_overlap_mean"] == 10.0


def test_noisy_int8_against_references(tmp_path: Path) -> None:
    from scipy.stats import spearmanr  # heavy: not at collection

    runs, qrels_path, data = _layout(tmp_path, int8_noise=0.5)
    rec = compare_int8(runs, qrels_path)
    assert rec is not None
    per = {m: evaluate(data["qrels"], data[m], measures=["ndcg@10"])["ndcg@10"] for m in ("fp32", "int8")}
    qids = sorted(data["qrels"])
    a, b = (np.array([per[m][q] for q in qids]) for m in ("int8", "fp32"))
    assert rec["mean"]["bge-v2-m3-int8"] == pytest.approx(a.mean(), abs=1e-12)
    assert rec["mean_difference_int8_minus_reference"] == pytest.approx(a.mean() - b.mean(), abs=1e-12)
    exact = randomisation_p_exact(paired_differences(a, b))
    assert rec["p_value"] == pytest.approx(exact, abs=0.02)  # 10,000 sign flips vs all 2**12
    lo, hi = rec["difference_interval"]
    assert lo <= rec["mean_difference_int8_minus_reference"] <= hi
    q0 = qids[0]
    f, i = dict(data["fp32"][q0]), dict(data["int8"][q0])
    docs = sorted(f)
    ref = spearmanr([f[d] for d in docs], [i[d] for d in docs]).statistic
    assert rec["agreement_with_reference"]["per_query"][q0]["spearman"] == pytest.approx(ref, abs=1e-12)
    assert rec["agreement_with_reference"]["spearman_min"] < 0.99  # noise of 0.5 sd must show


def test_report_keeps_int8_out_of_the_holm_families(tmp_path: Path) -> None:
    runs, qrels, _ = _layout(tmp_path, int8_noise=0.5)
    out = tmp_path / "out"
    report = write_report(runs, qrels, out, figures=False).read_text()
    stage = json.loads((out / "quality" / "hybrid-71k.json").read_text())
    assert "bge-v2-m3-int8" not in json.dumps(stage)
    assert "bge-v2-m3" in json.dumps(stage)
    rec = json.loads((out / "int8-quality.json").read_text())
    assert rec["family"].startswith("int8/vs-bge-v2-m3 (GPU float16 run")
    assert "## OpenVINO int8 against bge-v2-m3, GPU float16 (hybrid-71k, k = 100)" in report


def test_the_reference_is_labelled_as_the_run_it_is(tmp_path: Path) -> None:
    """The reference run is the quality phase's GPU run in the vendor's dtype, so the
    section must not call it fp32 (D-038); the label follows bench's vendor dtype for bge-v2-m3."""
    from analysis.int8.comparison import REFERENCE_DTYPE, markdown
    from bench.rerankers.base import VENDOR_DTYPE, choose_dtype

    assert REFERENCE_DTYPE == VENDOR_DTYPE["bge-v2-m3"] == choose_dtype("bge-v2-m3", "cuda", None)
    runs, qrels, _ = _layout(tmp_path, int8_noise=0.5)
    rec = compare_int8(runs, qrels)
    assert rec is not None
    device = "desktop GPU (the quality phase's run)"
    assert rec["reference"] == {
        "model": "bge-v2-m3",
        "dtype": "float16",
        "device": device,
        "plan_names": "fp32",
        "deviation": "D-038",
        "run": "hybrid-71k/bge-v2-m3@100.trec",
    }
    text = "\n".join(markdown(rec))
    assert "| bge-v2-m3 (GPU, float16) |" in text and "relative to bge-v2-m3, GPU float16" in text
    assert "(fp32)" not in text and "against fp32" not in text and "int8 - fp32" not in text


def test_no_int8_run_no_section(tmp_path: Path) -> None:
    runs, qrels, _ = _layout(tmp_path, int8_noise=0.0)
    (runs / "hybrid-71k" / "bge-v2-m3-int8@100.trec").unlink()
    assert compare_int8(runs, qrels) is None
    (runs / "hybrid-71k" / "bge-v2-m3@100.trec").unlink()
    write_run(runs / "hybrid-71k" / "bge-v2-m3-int8@100.trec", {"q0": [("d0-0", 1.0)]}, "x")
    rec = compare_int8(runs, qrels)
    assert rec is not None and rec["status"] == "not compared"
    assert "the reference run: bge-v2-m3, GPU float16" in rec["reason"]


def test_the_report_shows_the_plans_int8_gate_beside_the_int8_numbers(tmp_path: Path) -> None:
    """The agreement verdict of ``bench int8 agreement --against`` (results/int8/agreement.json
    beside the runs folder) is shown and recorded with the int8 comparison: NOT RUN without a verdict,
    PASSED, or FAILED with the queries and what a failed gate means for the published numbers."""
    runs, qrels, _ = _layout(tmp_path, int8_noise=0.1)
    gate_file = tmp_path / "results" / "int8" / "agreement.json"
    out = tmp_path / "out"
    report = write_report(runs, qrels, out, figures=False).read_text()
    rec = json.loads((out / "int8-quality.json").read_text())
    # the default verdict file is named as the runbook commits it, whatever the working folder
    assert rec["gate"]["status"] == "not run" and rec["gate"]["file"] == "results/int8/agreement.json"
    assert "The plan's int8 gate (Spearman >= 0.99 on every one of 20 queries" in report
    assert "NOT RUN" in report
    gate_file.parent.mkdir(parents=True)
    verdict = {
        "format": "int8-agreement/1",
        "passed": False,
        "min_spearman": 0.9712,
        "failed": ["q3", "q7"],
        "against": {"file": "scores-desktop.json"},
    }
    gate_file.write_text(json.dumps(verdict))
    report = write_report(runs, qrels, tmp_path / "out2", figures=False).read_text()
    rec = json.loads((tmp_path / "out2" / "int8-quality.json").read_text())
    assert rec["gate"] | {"file": None, "rule": None} == {
        "file": None,
        "rule": None,
        "status": "FAILED",
        "min_spearman": 0.9712,
        "failed_queries": ["q3", "q7"],
        "against": "scores-desktop.json",
    }
    assert "**FAILED** (minimum per-query Spearman 0.9712; below 0.99 or not comparable: q3, q7)" in report
    assert "hold for the desktop's instruction set only" in report
    gate_file.write_text(json.dumps({**verdict, "passed": True, "min_spearman": 0.9931, "failed": []}))
    assert "PASSED (minimum per-query Spearman 0.9931)" in compare_and_line(runs, qrels, gate_file)
    gate_file.write_text("{}")
    assert "NOT RUN (not an int8 agreement verdict" in compare_and_line(runs, qrels, gate_file)


def compare_and_line(runs: Path, qrels: Path, gate: Path) -> str:
    from analysis.int8.comparison import gate_line

    rec = compare_int8(runs, qrels, gate=gate)
    assert rec is not None
    return gate_line(rec["gate"])
