"""Issue 9, analysis side: incomplete runs, run ids, the embedder mark, the corpus rule (analysis.report)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import MappingProxyType

import pytest
from click.testing import CliRunner

import analysis.plan
from analysis.cli import cli
from analysis.plan import RUN_IDS, RunId, contamination_note
from analysis.report import write_report
from analysis.study import default_flags
from analysis.synthetic import write_study
from analysis.wording import flag_mark

Qrels = dict[str, dict[str, int]]
# qwen3-0.6b is far better than bge (and flagged): the best model and the winner of a complete study
MODELS = {"bge-v2-m3": 1.3, "qwen3-0.6b": 4.0}


@pytest.fixture(scope="module")
def small_study(tmp_path_factory: pytest.TempPathFactory, miracl_qrels: Qrels) -> Path:
    runs = tmp_path_factory.mktemp("hardening") / "runs"
    write_study(runs, miracl_qrels, stages=["hybrid-71k", "keyword-full"], models=MODELS, depths=(100,))
    return runs


def _drop_queries(path: Path, qids: set[str]) -> None:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(x for x in lines if x.split()[0] not in qids))


def _report(runs: Path, qrels: Path, out: Path, **kwargs: object) -> tuple[dict, dict, str]:  # type: ignore[type-arg]
    write_report(runs, qrels, out, figures=False, **kwargs)  # type: ignore[arg-type]
    hybrid = json.loads((out / "quality" / "hybrid-71k.json").read_text())
    full = json.loads((out / "quality" / "keyword-full.json").read_text())
    return hybrid, full, (out / "report.md").read_text()


def test_incomplete_run_is_recorded_marked_and_not_rated(small_study: Path, miracl_qrels: Qrels,
                                                        miracl_qrels_path: Path, tmp_path: Path) -> None:
    complete_h, _, complete_md = _report(small_study, miracl_qrels_path, tmp_path / "complete")
    assert complete_h["winner"]["100"] == "qwen3-0.6b" and complete_h["best"]["100"] == "qwen3-0.6b"
    runs = tmp_path / "runs"
    shutil.copytree(small_study, runs)
    gone = set(sorted(miracl_qrels)[:3])
    _drop_queries(runs / "hybrid-71k" / "qwen3-0.6b@100.trec", gone)
    hybrid, full, md = _report(runs, miracl_qrels_path, tmp_path / "out")
    rec = {r["model"]: r for r in hybrid["runs"]}
    qwen, bge = rec["qwen3-0.6b"], rec["bge-v2-m3"]
    assert qwen["queries_present"] == 302 and qwen["queries_missing"] == sorted(gone)
    assert qwen["rated"] is False and qwen["not_rated"] == "not rated: 3 of 305 queries missing"
    assert bge["queries_present"] == 305 and bge["queries_missing"] == [] and bge["rated"] is True
    assert hybrid["first_stage"]["queries_present"] == 305
    # the numbers are still recorded (missing queries score 0), the wording refuses them
    vs_first = {c["model"]: c for f in hybrid["families"] if f["id"].endswith("vs-first-stage")
                for c in f["comparisons"]}
    assert vs_first["qwen3-0.6b"]["wording"] == "not rated: 3 of 305 queries missing"
    assert vs_first["qwen3-0.6b"]["mean_difference"] > 0.1
    # never the best model, and no winner at that stage and depth; the other stage is untouched
    assert hybrid["best"] == {"100": "bge-v2-m3"} and hybrid["winner"] == {"100": None}
    assert full["winner"]["100"] == "qwen3-0.6b"
    assert "| qwen3-0.6b†@100 (incomplete: 302 queries) |" in md
    assert "| qwen3-0.6b†@100 |" in complete_md and "incomplete" not in complete_md
    assert "- No winner at hybrid-71k, depth 100: qwen3-0.6b is not rated: 3 of 305 queries missing" in md
    assert "Winner at hybrid-71k" not in md and "Winner at keyword-full, depth 100: qwen3-0.6b" in md
    # queries missing from the first stage too cannot be reranked: the run is rated
    _drop_queries(runs / "first-stage" / "hybrid-71k.trec", gone)
    hybrid, _, md = _report(runs, miracl_qrels_path, tmp_path / "out2")
    rec = {r["model"]: r for r in hybrid["runs"]}
    assert rec["qwen3-0.6b"]["rated"] is True and rec["qwen3-0.6b"]["queries_present"] == 302
    assert hybrid["first_stage"]["queries_missing"] == sorted(gone)
    assert hybrid["winner"]["100"] == "qwen3-0.6b" and "incomplete" not in md


def test_rehearsal_shaped_incomplete_standin_run(miracl_qrels: Qrels, miracl_qrels_path: Path,
                                                 tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    write_study(runs, miracl_qrels, stages=["vector-71k"], models={"minilm-standin": 1.1}, depths=(20, 100),
                tails=True)
    gone = {sorted(miracl_qrels)[10]}
    _drop_queries(runs / "vector-71k" / "minilm-standin@20.trec", gone)
    write_report(runs, miracl_qrels_path, tmp_path / "out", figures=False, stage_flags={})
    rec = json.loads((tmp_path / "out" / "quality" / "vector-71k.json").read_text())
    by_depth = {r["depth"]: r for r in rec["runs"]}
    assert by_depth[20]["not_rated"] == "not rated: 1 of 305 queries missing" and by_depth[100]["rated"]
    md = (tmp_path / "out" / "report.md").read_text()
    assert "| minilm-standin@20 (incomplete: 304 queries) |" in md and "| minilm-standin@100 |" in md
    assert rec["first_stage"]["flagged"] is False  # the rehearsal's embedder is not Arctic


def test_run_names_must_be_known_run_ids(small_study: Path, miracl_qrels_path: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(small_study, runs)
    # the name a reviewer found reported without its mark: an underscore instead of the plan's hyphen
    shutil.copy(runs / "hybrid-71k" / "qwen3-0.6b@100.trec", runs / "hybrid-71k" / "qwen3_4b@100.trec")
    result = CliRunner().invoke(cli, ["report", "--runs", str(runs), "--qrels", str(miracl_qrels_path),
                                      "--out", str(tmp_path / "o"), "--no-figures"])
    assert result.exit_code == 1
    assert str(runs / "hybrid-71k" / "qwen3_4b@100.trec") in result.output
    assert "found 'qwen3_4b'" in result.output and "qwen3-4b" in result.output
    assert "minilm-standin" in result.output and "analysis.plan.RUN_IDS" in result.output
    assert "(study runs folder)" in result.output
    assert not (tmp_path / "o").exists()
    # a registered variant is accepted
    (runs / "hybrid-71k" / "qwen3_4b@100.trec").rename(runs / "hybrid-71k" / "bge-v2-m3-int8@100.trec")
    result = CliRunner().invoke(cli, ["report", "--runs", str(runs), "--qrels", str(miracl_qrels_path),
                                      "--out", str(tmp_path / "o"), "--no-figures"])
    assert result.exit_code == 0, result.output


def test_registry_holds_the_plan_models_and_variants_carry_their_base_flag(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from analysis.plan import CONTAMINATION

    assert set(CONTAMINATION) <= set(RUN_IDS) and RUN_IDS["minilm-standin"].base is None
    assert RUN_IDS["bge-v2-m3-int8"].base == "bge-v2-m3"
    assert flag_mark("qwen3-0.6b") == "†" and flag_mark("minilm-standin") == "" and flag_mark("nope") == ""
    monkeypatch.setattr(analysis.plan, "RUN_IDS", MappingProxyType(
        {**RUN_IDS, "qwen3-0.6b-empty-instruction": RunId("qwen3-0.6b", "pitfalls (b)")}))
    assert flag_mark("qwen3-0.6b-empty-instruction") == "†"
    assert default_flags()["qwen3-0.6b-empty-instruction"] == "MIRACLReranking"
    note = contamination_note("qwen3-0.6b-empty-instruction")
    assert note.startswith("qwen3-0.6b-empty-instruction (a variant of qwen3-0.6b) lists MIRACLReranking")


def test_embedder_flag_marks_vector_and_hybrid_first_stages(small_study: Path, miracl_qrels_path: Path,
                                                           tmp_path: Path) -> None:
    hybrid, full, md = _report(small_study, miracl_qrels_path, tmp_path / "out")
    assert hybrid["first_stage"]["flagged"] is True
    assert "Arctic-l-v2.0" in hybrid["first_stage"]["flag_note"]
    assert "MIRACLRetrievalHardNegatives" in hybrid["first_stage"]["flag_note"]
    assert full["first_stage"]["flagged"] is False and full["first_stage"]["flag_note"] is None
    hybrid_md = md.split("## hybrid-71k")[1].split("## keyword-full")[0]
    full_md = md.split("## keyword-full")[1]
    assert "| first stage† |" in hybrid_md and "| first stage |" in full_md and "first stage†" not in full_md
    assert "first stage of hybrid-71k: the Arctic-l-v2.0 embedder" in md
    study = json.loads((tmp_path / "out" / "quality" / "study.json").read_text())
    assert sorted(study["first_stage_flags"]) == ["hybrid-71k", "vector-71k"]


def test_report_states_the_plans_corpus_rule(small_study: Path, miracl_qrels_path: Path,
                                             tmp_path: Path) -> None:
    _, _, md = _report(small_study, miracl_qrels_path, tmp_path / "out")
    assert "Numbers from different corpora are never compared directly" in md
    assert "Numbers of different stages are never compared" not in md
