"""Analysis side: incomplete runs, run ids, the embedder mark, the corpus rule (analysis.reporting.report)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

import analysis.core.plan
from analysis.core.plan import RUN_IDS, RunId, contamination_note
from analysis.reporting.report import write_report
from analysis.reporting.study import default_flags
from analysis.reporting.wording import flag_mark
from analysis.simulation.synthetic import write_study
from tests.support.report_cli import invoke_report

Qrels = dict[str, dict[str, int]]
# qwen3-0.6b is far better than bge (and flagged): the best model and the winner of a complete study
MODELS = {"bge-v2-m3": 1.3, "qwen3-0.6b": 4.0}
# hybrid-71k.json, keyword-full.json, report.md and the folder of one report
Reported = tuple[dict[str, Any], dict[str, Any], str, Path]


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


@pytest.fixture(scope="module")
def small_report(
    small_study: Path, miracl_qrels_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Reported:
    """The small study's report (no figures), written once for the module's tests that only read it."""
    out = tmp_path_factory.mktemp("small-report") / "out"
    return (*_report(small_study, miracl_qrels_path, out), out)


def test_incomplete_run_is_recorded_marked_and_not_rated(
    small_study: Path, miracl_qrels: Qrels, miracl_qrels_path: Path, tmp_path: Path
) -> None:
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
    vs_first = {
        c["model"]: c
        for f in hybrid["families"]
        if f["id"].endswith("vs-first-stage")
        for c in f["comparisons"]
    }
    assert vs_first["qwen3-0.6b"]["wording"] == "not rated: 3 of 305 queries missing"
    assert vs_first["qwen3-0.6b"]["mean_difference"] > 0.1
    # never the best model, and no winner at that stage and depth; the other stage is untouched
    assert hybrid["best"] == {"100": "bge-v2-m3"} and hybrid["winner"] == {"100": None}
    assert full["winner"]["100"] == "qwen3-0.6b"
    assert "| qwen3-0.6b†@100 (incomplete: 302 queries) |" in md
    assert "| qwen3-0.6b†@100 |" in complete_md and "incomplete" not in complete_md
    assert "- No winner at hybrid-71k, depth 100: qwen3-0.6b is not rated: 3 of 305 queries missing" in md
    assert "Winner at hybrid-71k" not in md and "Winner at keyword-full, depth 100: qwen3-0.6b" in md
    # queries missing from the first stage too cannot be reranked: the run is rated (no run may hold a query
    # its first stage lacks: analysis.inputs.reordering, so bge-v2-m3 loses them as well)
    _drop_queries(runs / "first-stage" / "hybrid-71k.trec", gone)
    _drop_queries(runs / "hybrid-71k" / "bge-v2-m3@100.trec", gone)
    hybrid, _, md = _report(runs, miracl_qrels_path, tmp_path / "out2")
    rec = {r["model"]: r for r in hybrid["runs"]}
    assert rec["qwen3-0.6b"]["rated"] is True and rec["qwen3-0.6b"]["queries_present"] == 302
    assert hybrid["first_stage"]["queries_missing"] == sorted(gone)
    assert hybrid["winner"]["100"] == "qwen3-0.6b" and "incomplete" not in md


def test_rehearsal_shaped_incomplete_standin_run(
    miracl_qrels: Qrels, miracl_qrels_path: Path, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    write_study(
        runs,
        miracl_qrels,
        stages=["vector-71k"],
        models={"minilm-standin": 1.1},
        depths=(20, 100),
        tails=True,
    )
    gone = {sorted(miracl_qrels)[10]}
    _drop_queries(runs / "vector-71k" / "minilm-standin@20.trec", gone)
    write_report(runs, miracl_qrels_path, tmp_path / "out", figures=False, stage_flags={})
    rec = json.loads((tmp_path / "out" / "quality" / "vector-71k.json").read_text())
    by_depth = {r["depth"]: r for r in rec["runs"]}
    assert by_depth[20]["not_rated"] == "not rated: 1 of 305 queries missing" and by_depth[100]["rated"]
    md = (tmp_path / "out" / "report.md").read_text()
    assert "| minilm-standin‡@20 (incomplete: 304 queries) |" in md and "| minilm-standin‡@100 |" in md
    assert rec["first_stage"]["flagged"] is False  # the rehearsal's embedder is not Arctic


def test_run_names_must_be_known_run_ids(small_study: Path, miracl_qrels_path: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(small_study, runs)
    # the name a reviewer found reported without its mark: an underscore instead of the plan's hyphen
    shutil.copy(runs / "hybrid-71k" / "qwen3-0.6b@100.trec", runs / "hybrid-71k" / "qwen3_4b@100.trec")
    result = invoke_report(runs, miracl_qrels_path, tmp_path / "o")
    assert result.exit_code == 1
    assert str(runs / "hybrid-71k" / "qwen3_4b@100.trec") in result.output
    assert "found 'qwen3_4b'" in result.output and "qwen3-4b" in result.output
    assert "minilm-standin" in result.output and "analysis.core.plan.RUN_IDS" in result.output
    assert "(study runs folder)" in result.output
    assert not (tmp_path / "o").exists()
    # a registered variant is accepted
    (runs / "hybrid-71k" / "qwen3_4b@100.trec").rename(runs / "hybrid-71k" / "bge-v2-m3-int8@100.trec")
    result = invoke_report(runs, miracl_qrels_path, tmp_path / "o")
    assert result.exit_code == 0, result.output


def test_registry_holds_the_plan_models_and_variants_carry_their_base_flag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from analysis.core.plan import CONTAMINATION

    assert set(CONTAMINATION) <= set(RUN_IDS) and RUN_IDS["minilm-standin"].base is None
    assert RUN_IDS["bge-v2-m3-int8"].base == "bge-v2-m3"
    assert flag_mark("qwen3-0.6b") == "†" and flag_mark("minilm-standin") == "" and flag_mark("nope") == ""
    monkeypatch.setattr(
        analysis.core.plan,
        "RUN_IDS",
        MappingProxyType({**RUN_IDS, "qwen3-0.6b-empty-instruction": RunId("qwen3-0.6b", "pitfalls (b)")}),
    )
    assert flag_mark("qwen3-0.6b-empty-instruction") == "†"
    assert default_flags()["qwen3-0.6b-empty-instruction"] == "MIRACLReranking"
    note = contamination_note("qwen3-0.6b-empty-instruction")
    assert note.startswith("qwen3-0.6b-empty-instruction (a variant of qwen3-0.6b) lists MIRACLReranking")


def test_embedder_flag_marks_vector_and_hybrid_first_stages(small_report: Reported) -> None:
    hybrid, full, md, out = small_report
    assert hybrid["first_stage"]["flagged"] is True
    assert "Arctic-l-v2.0" in hybrid["first_stage"]["flag_note"]
    assert "MIRACLRetrievalHardNegatives" in hybrid["first_stage"]["flag_note"]
    assert full["first_stage"]["flagged"] is False and full["first_stage"]["flag_note"] is None
    hybrid_md = md.split("## hybrid-71k")[1].split("## keyword-full")[0]
    full_md = md.split("## keyword-full")[1]
    assert "| first stage† |" in hybrid_md and "| first stage |" in full_md and "first stage†" not in full_md
    assert "first stage of hybrid-71k: the Arctic-l-v2.0 embedder" in md
    study = json.loads((out / "quality" / "study.json").read_text())
    assert sorted(study["first_stage_flags"]) == ["hybrid-71k", "vector-71k"]


def test_report_states_the_plans_corpus_rule(small_report: Reported) -> None:
    md = small_report[2]
    assert "Numbers from different corpora are never compared directly" in md
    assert "Numbers of different stages are never compared" not in md


# --- plan check 2 inside `analysis report` ----------------------------------------------------------


def test_plan_check_2_verdict_in_study_json(small_report: Reported) -> None:
    out = small_report[3]
    study = json.loads((out / "quality" / "study.json").read_text())
    check = study["plan_check_2"]
    assert check["passed"] is True and check["tolerance"] == 0.0001 and check["not_run"] is None
    assert [(c["stage"], c["run"]) for c in check["runs"]] == [
        ("hybrid-71k", "hybrid-71k/qwen3-0.6b@100.trec"),
        ("keyword-full", "keyword-full/qwen3-0.6b@100.trec"),
    ]
    for c in check["runs"]:
        # synthetic scores have no ties: pytrec_eval's own ordering is compared on every query, and agrees
        assert c["queries_with_ties"] == 0 and c["own_order_checked"] is True
        assert c["own_order_queries"] == 305
        assert c["max_abs_diff"] <= 1e-12 and c["own_order_max_abs_diff"] <= 1e-12 and c["queries"] == 305
    md = small_report[2]
    assert "Plan check 2 (our nDCG@10 against pytrec_eval ndcg_cut_10, tolerance 0.0001" in md
    assert "): PASS" in md


def test_plan_check_2_failure_fails_the_command(
    small_study: Path, miracl_qrels_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import analysis.reporting.pytrec_check as pc

    real = pc.evaluate_table

    def off_by_a_little(*args: object, **kwargs: object) -> dict:  # type: ignore[type-arg]
        return {m: v + 2e-4 for m, v in real(*args, **kwargs).items()}  # type: ignore[arg-type]

    monkeypatch.setattr(pc, "evaluate_table", off_by_a_little)
    result = invoke_report(small_study, miracl_qrels_path, tmp_path / "out")
    assert result.exit_code == 1
    assert "the report was written, but Plan check 2" in result.output and "FAIL" in result.output
    check = json.loads((tmp_path / "out" / "quality" / "study.json").read_text())["plan_check_2"]
    assert check["passed"] is False
    assert all(c["max_abs_diff"] == pytest.approx(2e-4, abs=1e-12) for c in check["runs"])


def test_plan_check_2_never_says_passed_for_a_run_it_did_not_compare(
    small_study: Path, miracl_qrels_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose every query has tied scores is compared in pytrec_eval's own order on no query;
    study.json said ``passed: true`` beside ``own_order_checked: false`` while `check-pytrec` said NOT
    COMPARED. Now the run and the check say NOT COMPARED, ``passed`` is false, and the command says so in a
    warning (exit 0: nothing disagreed; `analysis check-pytrec` on that run exits 1)."""
    import analysis.reporting.pytrec_check as pc

    monkeypatch.setattr(pc, "_tied_queries", lambda table: set(table.qids))  # every query of the run tied
    result = invoke_report(small_study, miracl_qrels_path, tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "Warning: the report was written, but Plan check 2" in result.output
    assert "NOT COMPARED" in result.output
    check = json.loads((tmp_path / "out" / "quality" / "study.json").read_text())["plan_check_2"]
    assert check["passed"] is False and check["verdict"] == "NOT COMPARED"
    for c in check["runs"]:
        assert c["max_abs_diff"] <= 1e-12  # the rank-faithful comparison still agrees
        assert (c["own_order_checked"], c["passed"], c["verdict"]) == (False, False, "NOT COMPARED")
    md = (tmp_path / "out" / "report.md").read_text()
    assert "): NOT COMPARED" in md and "own ordering not compared" in md and "): PASS" not in md


def test_own_ordering_catches_an_order_that_contradicts_the_scores(miracl_qrels: Qrels) -> None:
    from analysis.reporting.pytrec_check import compare_with_pytrec_eval

    q = sorted(miracl_qrels)[0]
    rel = sorted(d for d, r in miracl_qrels[q].items() if r > 0)[0]
    # rank order puts the relevant passage first, but its score is the lowest: an ordering bug
    run = {q: [(rel, 0.1), ("unjudged-a", 0.9), ("unjudged-b", 0.5)]}
    cmp = compare_with_pytrec_eval({q: miracl_qrels[q]}, run)
    assert cmp.max_abs_diff == 0.0  # the rank-faithful comparison cannot see it
    assert cmp.own_order_checked and cmp.own_order_max_abs_diff > 0.1 and cmp.passed is False
    fixed = {q: [(rel, 1.0), ("unjudged-a", 0.9), ("unjudged-b", 0.5)]}
    assert compare_with_pytrec_eval({q: miracl_qrels[q]}, fixed).passed is True
    tied = {q: [(rel, 0.5), ("unjudged-a", 0.5), ("unjudged-b", 0.5)]}
    cmp = compare_with_pytrec_eval({q: miracl_qrels[q]}, tied)
    assert cmp.queries_with_ties == 1 and not cmp.own_order_checked and cmp.passed is True
    # nothing compared in pytrec_eval's own order: study.json's record does not say passed
    assert cmp.verdict == "NOT COMPARED"
    assert cmp.as_dict()["own_order_checked"] is False and cmp.as_dict()["passed"] is False
    # a tie in one query does not hide an ordering bug in another
    q2 = sorted(miracl_qrels)[1]
    rel2 = sorted(d for d, r in miracl_qrels[q2].items() if r > 0)[0]
    both = {**tied, q2: [(rel2, 0.1), ("unjudged-c", 0.9)]}
    cmp = compare_with_pytrec_eval({q: miracl_qrels[q], q2: miracl_qrels[q2]}, both)
    assert cmp.queries_with_ties == 1 and cmp.own_order_queries == 1 and cmp.own_order_worst_qid == q2
    assert cmp.own_order_max_abs_diff > 0.1 and cmp.passed is False


# --- the report is built beside --out and swapped in -----------------------------------------------


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_failed_report_leaves_the_old_one_intact(
    small_study: Path, miracl_qrels_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import analysis.reporting.report as report

    out = tmp_path / "study"
    out.mkdir()
    (out / "journal.jsonl").write_text("{}\n")  # a rehearsal folder holds more than the report
    write_report(small_study, miracl_qrels_path, out, figures=False)
    before = _tree(out)
    assert "quality/hybrid-71k.json" in before and "report.md" in before

    def broken(ctx: report.ReportContext) -> list[str]:
        (ctx.build_dir / "quality" / "half.json").write_text("{")
        raise OSError(28, "No space left on device", str(ctx.build_dir / "quality" / "half.json"))

    monkeypatch.setattr(report, "SECTIONS", [*report.SECTIONS, report.Section("broken", (), broken)])
    result = invoke_report(small_study, miracl_qrels_path, out)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "No space left on device (OSError)" in result.output and "half.json" in result.output
    assert _tree(out) == before  # nothing half-written, nothing lost
    assert sorted(p.name for p in tmp_path.iterdir()) == ["study"]  # no temporary folder left beside it


def test_stale_files_of_an_earlier_report_are_gone(
    small_study: Path, miracl_qrels_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "results"
    write_report(small_study, miracl_qrels_path, out)
    assert (out / "figures" / "keyword-full.png").is_file()
    (out / "notes.txt").write_text("mine")
    runs = tmp_path / "runs"
    shutil.copytree(small_study, runs)
    shutil.rmtree(runs / "keyword-full")
    (runs / "first-stage" / "keyword-full.trec").unlink()
    write_report(runs, miracl_qrels_path, out, figures=False)
    assert sorted(p.name for p in (out / "quality").iterdir()) == ["hybrid-71k.json", "study.json"]
    assert not (out / "figures").exists()  # no figures this time: none of the earlier ones stay
    assert (out / "notes.txt").read_text() == "mine"  # what the report does not own is left alone
    assert "keyword-full" not in (out / "report.md").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results", "runs"]


def test_unwritable_out_is_a_one_line_error(
    small_study: Path, miracl_qrels_path: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = invoke_report(small_study, miracl_qrels_path, blocker / "results")
    assert result.exit_code == 1 and "Traceback" not in result.output and result.exception is not None
    assert str(blocker) in result.output and "Error" in result.output and "Fix:" in result.output
