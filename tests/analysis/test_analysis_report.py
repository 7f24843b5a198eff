"""analysis report and the CLI on a generated study over the real qrels (analysis.reporting.report,
analysis.cli)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from analysis.cli import METRICS_JSON_KEYS, cli
from analysis.reporting.report import write_report
from analysis.reporting.wording import word
from analysis.simulation.synthetic import write_study
from analysis.stats.multiple import holm
from tests.support.report_cli import invoke_report

Qrels = dict[str, dict[str, int]]
MODELS = {"bge-v2-m3": 1.2, "gte-base": 1.15, "qwen3-4b": 4.0}  # qwen3-4b: flagged, far better


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory, miracl_qrels: Qrels) -> Path:
    runs = tmp_path_factory.mktemp("study") / "runs"
    write_study(
        runs, miracl_qrels, stages=["hybrid-71k", "keyword-full"], models=MODELS, depths=(20, 100), tails=True
    )  # bench's layout: depth-20 runs hold the first stage's tail too
    (runs / "first-stage" / "keyword-plain-71k.trec").write_bytes(
        (runs / "first-stage" / "hybrid-71k.trec").read_bytes()
    )  # a reference stage without rerankers
    # a model that returns the first stage unchanged: p = 1 and on par
    shutil.copy(runs / "first-stage" / "hybrid-71k.trec", runs / "hybrid-71k" / "jina-v3.5@100.trec")
    return runs


@pytest.fixture(scope="module")
def reported(study: Path, miracl_qrels_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out")
    write_report(study, miracl_qrels_path, out, header_lines=["rehearsal, stand-in models"])
    return out


def test_rerun_is_byte_identical(
    study: Path, miracl_qrels_path: Path, reported: Path, tmp_path: Path
) -> None:
    write_report(study, miracl_qrels_path, tmp_path, header_lines=["rehearsal, stand-in models"])
    names = sorted(p.name for p in (reported / "quality").glob("*.json"))
    assert names == ["hybrid-71k.json", "keyword-full.json", "keyword-plain-71k.json", "study.json"]
    for name in names:
        assert (reported / "quality" / name).read_bytes() == (tmp_path / "quality" / name).read_bytes()
    for png in ("hybrid-71k.png", "keyword-full.png", "keyword-plain-71k.png"):
        assert (tmp_path / "figures" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (tmp_path / "figures" / png).read_bytes() == (reported / "figures" / png).read_bytes()
    assert (tmp_path / "report.md").read_bytes() == (reported / "report.md").read_bytes()


def test_json_records(reported: Path, miracl_qrels_path: Path, study: Path) -> None:
    study_json = json.loads((reported / "quality" / "study.json").read_text())
    s = study_json["settings"]
    assert (s["seed"], s["bootstrap_resamples"], s["randomisation_resamples"]) == (20261009, 10_000, 10_000)
    assert "PCG64" in s["rng"] and "first-stage" in s["tie_rule"] and "scores 0" in s["missing_query_policy"]
    qrels_sha = hashlib.sha256(miracl_qrels_path.read_bytes()).hexdigest()
    assert study_json["inputs"]["qrels"]["sha256"] == qrels_sha
    assert study_json["inputs"]["queries"] == 305
    rec = json.loads((reported / "quality" / "hybrid-71k.json").read_text())
    for run in [rec["first_stage"], *rec["runs"]]:
        assert run["sha256"] == hashlib.sha256((study / run["run"]).read_bytes()).hexdigest()
        for metric in ("ndcg@10", "hit@5"):
            lo, hi = run["intervals"][metric]
            assert lo <= run["means"][metric] <= hi and lo < hi
    flagged = {r["model"]: r["flagged"] for r in rec["runs"]}
    assert flagged == {"qwen3-4b": True, "bge-v2-m3": False, "gte-base": False, "jina-v3.5": False}
    families = {f["id"]: f for f in rec["families"]}
    assert sorted(families) == [
        "hybrid-71k/@100/vs-best",
        "hybrid-71k/@100/vs-first-stage",
        "hybrid-71k/@20/vs-best",
        "hybrid-71k/@20/vs-first-stage",
    ]
    assert len(families["hybrid-71k/@100/vs-first-stage"]["comparisons"]) == 4
    assert len(families["hybrid-71k/@100/vs-best"]["comparisons"]) == 3
    means = {(r["model"], r["depth"]): r["means"]["ndcg@10"] for r in rec["runs"]}
    for fam in families.values():
        p = [c["p_value"] for c in fam["comparisons"]]
        _, adjusted = holm(p)
        assert [c["p_holm"] for c in fam["comparisons"]] == adjusted.tolist()
        for c in fam["comparisons"]:
            assert c["wording"] == word(c["mean_difference"], c["p_holm"])
            assert 1 / 10_001 <= c["p_value"] <= 1
            ref = (
                rec["first_stage"]["means"]["ndcg@10"]
                if c["reference"] == "first-stage"
                else means[(c["reference"], c["depth"])]
            )
            assert c["mean_difference"] == pytest.approx(means[(c["model"], c["depth"])] - ref, abs=1e-15)
    copy = next(
        c for c in families["hybrid-71k/@100/vs-first-stage"]["comparisons"] if c["model"] == "jina-v3.5"
    )
    assert copy["p_value"] == 1.0 and copy["wording"] == "on par" and copy["mean_difference"] == 0.0
    assert rec["best"] == {"100": "qwen3-4b", "20": "qwen3-4b"}
    assert rec["winner"]["100"] == "qwen3-4b"
    plain = json.loads((reported / "quality" / "keyword-plain-71k.json").read_text())
    assert plain["runs"] == [] and plain["families"] == [] and plain["winner"] == {}


def test_tails_are_first_stage_order(study: Path) -> None:
    from analysis.inputs.trec import read_run

    first = read_run(study / "first-stage" / "hybrid-71k.trec")
    at20 = read_run(study / "hybrid-71k" / "gte-base@20.trec")
    for q, ranked in at20.items():
        assert len(ranked) == len(first[q])
        assert [d for d, _ in ranked[20:]] == [d for d, _ in first[q] if d not in {x for x, _ in ranked[:20]}]
        assert {d for d, _ in ranked[:20]} == {d for d, _ in first[q][:20]}


def test_markdown(reported: Path) -> None:
    md = (reported / "report.md").read_text()
    assert "rehearsal, stand-in models" in md
    assert "## hybrid-71k (corpus 71k)" in md and "## keyword-full (corpus full)" in md
    assert "| qwen3-4b†@100 |" in md and "| bge-v2-m3@100 |" in md
    assert "Winner at hybrid-71k, depth 100: qwen3-4b†" in md
    winner_line = next(x for x in md.splitlines() if x.startswith("- Winner at hybrid-71k, depth 100"))
    assert "MIRACLReranking" in winner_line  # a flagged winner always carries the note
    assert "lower bounds" in md and "Hit@5 ≥" in md
    assert "![nDCG@10 at hybrid-71k](figures/hybrid-71k.png)" in md


def test_layout_errors(study: Path, miracl_qrels_path: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(study, runs)
    (runs / "hybrid-71k" / "bad-name.trec").write_text("x")
    result = invoke_report(runs, miracl_qrels_path, tmp_path / "o")
    assert result.exit_code == 1 and "<model>@<k>.trec" in result.output
    (runs / "hybrid-71k" / "bad-name.trec").unlink()
    (runs / "vector-71k").mkdir()
    result = invoke_report(runs, miracl_qrels_path, tmp_path / "o")
    assert result.exit_code == 1 and "first-stage/vector-71k.trec" in result.output


def test_metrics_cli(study: Path, miracl_qrels_path: Path, tmp_path: Path) -> None:
    a = study / "hybrid-71k" / "qwen3-4b@100.trec"
    b = study / "first-stage" / "hybrid-71k.trec"
    result = CliRunner().invoke(
        cli, ["metrics", "--qrels", str(miracl_qrels_path), "--run", str(a), "--run", str(b), "--json"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert list(out) == [str(a), str(b)]
    expected_keys = [
        "ndcg@10",
        "ndcg'@10",
        "hit@5",
        "hit@10",
        "recall@5",
        "recall@10",
        "recall@20",
        "recall@100",
        "mrr@10",
        "judged@10",
        "queries",
    ]
    assert list(out[str(a)]) == [*expected_keys, "queries_present", "queries_missing"]
    assert [*METRICS_JSON_KEYS, "queries"] == expected_keys
    assert out[str(a)]["queries"] == 305 and out[str(a)]["ndcg@10"] > out[str(b)]["ndcg@10"]
    bad = tmp_path / "bad.trec"
    bad.write_text("q Q0 d 1 nan t\n")
    result = CliRunner().invoke(cli, ["metrics", "--qrels", str(miracl_qrels_path), "--run", str(bad)])
    assert result.exit_code == 1 and f"{bad}:1" in result.output and "Fix:" in result.output


def test_check_pytrec_cli(study: Path, miracl_qrels_path: Path) -> None:
    run = study / "keyword-full" / "gte-base@20.trec"
    result = CliRunner().invoke(cli, ["check-pytrec", "--qrels", str(miracl_qrels_path), "--run", str(run)])
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output and "ndcg_cut_10" in result.output
    diff = float(next(x for x in result.output.splitlines() if x.startswith("largest")).split()[3])
    assert diff < 1e-9


def test_simulate_cli_small(miracl_qrels_path: Path, tmp_path: Path) -> None:
    # the real qrels' first 80 queries: the signal's calibration (most of the command's time) scales with them
    lines = miracl_qrels_path.read_text(encoding="utf-8").splitlines(keepends=True)
    keep = sorted({line.split()[0] for line in lines})[:80]
    qrels = tmp_path / "qrels-80.tsv"
    qrels.write_text("".join(line for line in lines if line.split()[0] in keep), encoding="utf-8")
    result = CliRunner().invoke(cli, ["simulate", "--qrels", str(qrels), "--studies", "2", "--models", "3"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["studies"] == 2 and out["effect_signal"] > out["null_signal"]
    for rate in out["rates"].values():
        assert 0.0 <= rate["rate"] <= 1.0
    assert set(out["rates"]) >= {"fwer_vs_first_stage", "fwer_vs_best", "power_vs_first_stage"}


def test_calibration_hits_its_target(miracl_qrels: Qrels) -> None:
    from analysis.simulation.synthetic import Candidates, calibrate_signal, first_stage_table, system_scores
    from analysis.stats.metrics import Judgments, evaluate_table

    c, j = Candidates.from_qrels(miracl_qrels), Judgments.from_qrels(miracl_qrels)
    signal = calibrate_signal(c, j, 0.4, seed=3)
    rng = np.random.default_rng(99)
    values = [
        evaluate_table(j, first_stage_table(c, system_scores(c, signal, rng)), ["ndcg@10"])["ndcg@10"].mean()
        for _ in range(6)
    ]
    assert float(np.mean(values)) == pytest.approx(0.4, abs=0.01)


def test_parallel_reading_changes_nothing(
    study: Path, miracl_qrels_path: Path, reported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from analysis.reporting.study import worker_count

    # the module's report (``reported``) read its runs in one process, as the default does; only where the
    # environment asks for more is a one-process report made here
    one = reported
    if worker_count(100) != 1:
        monkeypatch.setenv("ANALYSIS_WORKERS", "1")
        one = tmp_path / "one"
        write_report(
            study, miracl_qrels_path, one, header_lines=["rehearsal, stand-in models"], figures=False
        )
    monkeypatch.setenv("ANALYSIS_WORKERS", "1")
    assert worker_count(100) == 1
    monkeypatch.setenv("ANALYSIS_WORKERS", "2")
    assert worker_count(100) == 2
    write_report(
        study, miracl_qrels_path, tmp_path / "two", header_lines=["rehearsal, stand-in models"], figures=False
    )
    for name in ("study.json", "hybrid-71k.json", "keyword-full.json"):
        assert (one / "quality" / name).read_bytes() == (tmp_path / "two" / "quality" / name).read_bytes()
    # a malformed file found in a worker process is reported like in-process
    runs = tmp_path / "runs"
    shutil.copytree(study, runs)
    target = runs / "keyword-full" / "gte-base@20.trec"
    lines = target.read_text().splitlines(keepends=True)
    lines[6] = lines[6].replace(" Q0 ", " Q0 extra ")
    target.write_text("".join(lines))
    from analysis.inputs.trec import TrecFormatError

    with pytest.raises(TrecFormatError) as exc:
        write_report(runs, miracl_qrels_path, tmp_path / "bad", figures=False)
    assert exc.value.line == 7 and exc.value.path == str(target)
