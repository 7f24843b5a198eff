"""Model selection (rated / not rated, per-depth) and the determinism / dtype verdict inputs."""

from __future__ import annotations

import math
import types
from pathlib import Path
from typing import Any

import pytest

from analysis.inputs.trec import write_run
from bench.equality.results import write_result
from bench.quality.commands import lock_names, per_depth_models, rated
from bench.quality.verdicts import compare_runs, decide, format_verdicts


def test_unrated_models_are_skipped_with_reason(tmp_path: Path) -> None:
    write_result("bge-v2-m3", {"model": "bge-v2-m3", "rated": True, "reason": "spearman >= 0.99"}, tmp_path)
    write_result("gte-base", {"model": "gte-base", "rated": False, "reason": "reference failed"}, tmp_path)
    keep, skipped, outcomes = rated(["bge-v2-m3", "gte-base", "jina-v3.5"], tmp_path)
    assert keep == ["bge-v2-m3"]
    assert skipped["gte-base"] == "reference failed"
    assert "docker compose run --rm bench check-adapters jina-v3.5" in skipped["jina-v3.5"]
    assert outcomes["bge-v2-m3"]["rated"] is True


def test_per_depth_models() -> None:
    outcomes = {"voyage-rerank-3": {"pointwise": True}, "voyage-rerank-3-lite": {"pointwise": False}}
    models = ["bge-v2-m3", "jina-v3.5", "voyage-rerank-3", "voyage-rerank-3-lite"]
    assert per_depth_models(models, outcomes) == {"jina-v3.5", "voyage-rerank-3-lite"}
    assert per_depth_models(["voyage-rerank-3"], {}) == {"voyage-rerank-3"}  # no check 3: every depth


def test_lock_names() -> None:
    assert lock_names(["hybrid-71k"]) == ["miracl", "corpus-71k"]
    assert lock_names(["keyword-full", "vector-71k"]) == ["miracl", "corpus-71k", "corpus-full"]


def test_compare_runs_applies_analysis_rules(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q1\t0\t1#0\t1\nq2\t0\t2#0\t1\n")
    docs = [f"{i}#0" for i in range(1, 12)]
    same = {
        "q1": [(d, float(-i)) for i, d in enumerate(docs)],
        "q2": [(d, float(-i)) for i, d in enumerate(docs)],
    }
    other = {"q1": same["q1"], "q2": [(d, float(-i)) for i, d in enumerate(reversed(docs))]}
    for name, run in (("a", same), ("b", same), ("c", other)):
        p = tmp_path / name / "hybrid-71k" / "m@100.trec"
        p.parent.mkdir(parents=True)
        write_run(p, run, tag="hybrid-71k/m@100")
    first = tmp_path / "first-stage" / "hybrid-71k.trec"
    first.parent.mkdir()
    write_run(first, same, tag="hybrid-71k")
    ok = compare_runs(
        "determinism",
        tmp_path / "a",
        tmp_path / "b",
        stage="hybrid-71k",
        models=["m"],
        depths=[100],
        qrels_path=qrels,
        first_stage=first,
    )
    assert len(ok) == 1 and ok[0]["passed"] and ok[0]["difference_points"] == 0.0
    assert ok[0]["reordering_breaks"] == [] and ok[0]["first_stage"] == str(first)
    bad = compare_runs(
        "dtype",
        tmp_path / "a",
        tmp_path / "c",
        stage="hybrid-71k",
        models=["m"],
        depths=[100],
        qrels_path=qrels,
        first_stage=first,
        qids=["q2"],
    )
    assert bad[0]["queries"] == 1 and not bad[0]["passed"] and bad[0]["reordering_breaks"] == []
    assert abs(bad[0]["first"] - 1 / math.log2(3)) < 1e-12  # q2: relevant passage at rank 2


def test_determinism_and_dtype_refuse_a_run_with_a_foreign_candidate(tmp_path: Path) -> None:
    """Both runs of each pair must reorder the frozen candidates. Two runs that agree on nDCG@10
    pass the rule, yet one holds a passage the first stage never returned: the verdict fails, naming it."""
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q1\t0\t1#0\t1\n")
    docs = [f"{i}#0" for i in range(1, 12)]
    cands = {"q1": [(d, float(-i)) for i, d in enumerate(docs)]}
    foreign = {"q1": [*cands["q1"][:-1], ("99#0", -10.0)]}  # same top 10, a foreign id at rank 11
    first = tmp_path / "first-stage" / "hybrid-71k.trec"
    first.parent.mkdir()
    write_run(first, cands, tag="hybrid-71k")
    for name, run in (("a", cands), ("b", foreign)):
        p = tmp_path / name / "hybrid-71k" / "m@100.trec"
        p.parent.mkdir(parents=True)
        write_run(p, run, tag="hybrid-71k/m@100")
    for kind in ("determinism", "dtype"):
        got = compare_runs(
            kind,
            tmp_path / "a",
            tmp_path / "b",
            stage="hybrid-71k",
            models=["m"],
            depths=[100],
            qrels_path=qrels,
            first_stage=first,
        )
        assert got[0]["difference_points"] == 0.0 and got[0]["passed"] is False
        (msg,) = got[0]["reordering_breaks"]
        assert str(tmp_path / "b" / "hybrid-71k" / "m@100.trec") in msg and "'99#0'" in msg
        decision = decide(got, [("m", 100)], {})
        assert decision["exit_code"] == 1 and decision["failed"] == ["m@100"]
        assert "m@100: reordering invariant broken: " in format_verdicts(got, decision)
    missing = compare_runs(
        "determinism",
        tmp_path / "a",
        tmp_path / "a",
        stage="hybrid-71k",
        models=["m"],
        depths=[100],
        qrels_path=qrels,
        first_stage=tmp_path / "none.trec",
    )
    assert missing[0]["passed"] is False and len(missing[0]["reordering_breaks"]) == 2


def test_pitfall_variants_are_rated_by_their_plan_model(tmp_path: Path) -> None:
    from bench.core.plan import PITFALL_RUN_IDS

    write_result("qwen3-0.6b", {"model": "qwen3-0.6b", "rated": True, "reason": "spearman >= 0.99"}, tmp_path)
    keep, skipped, outcomes = rated(list(PITFALL_RUN_IDS), tmp_path)
    assert keep == list(PITFALL_RUN_IDS) and skipped == {}
    assert {o["model"] for o in outcomes.values()} == {"qwen3-0.6b"}
    write_result("qwen3-0.6b", {"model": "qwen3-0.6b", "rated": False, "reason": "spearman 0.5"}, tmp_path)
    keep, skipped, _ = rated(list(PITFALL_RUN_IDS), tmp_path)
    assert keep == [] and set(skipped.values()) == {"spearman 0.5"}


def test_quality_pitfalls_runs_the_variants_into_their_own_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    import bench.quality.commands as commands
    from bench.core.plan import PITFALL_RUN_IDS
    from bench.quality.cli import quality

    seen: dict[str, Any] = {}

    def fake_session(setup: Any, **kw: Any) -> Any:
        seen.update(setup=setup, **kw)
        outcome = types.SimpleNamespace(scored=0, skipped=0, errors=0, not_run={})
        study = types.SimpleNamespace(manifest={}, save=lambda: None)
        return study, types.SimpleNamespace(outcome=outcome, runs=[]), {}

    import bench.quality.check2 as check2
    import bench.quality.inputs as inputs

    monkeypatch.setattr(commands, "run_session", fake_session)
    monkeypatch.setattr(check2, "check_runs", lambda runs, qrels: {"runs": [], "passed": True, "error": None})
    monkeypatch.setattr(inputs, "study_queries", lambda: ({}, tmp_path / "qrels.tsv"))
    monkeypatch.setattr("bench.quality.cli.repo_root", lambda: tmp_path)
    res = CliRunner().invoke(quality, ["--pitfalls", "--device", "cpu"])
    assert res.exit_code == 0, res.output
    assert seen["stages"] == ("hybrid-71k",) and seen["models"] == PITFALL_RUN_IDS
    assert seen["setup"].study_dir == tmp_path / "studies" / "pitfalls"
    assert seen["setup"].runs_dir == tmp_path / "results" / "pitfalls" / "runs"  # never runs/hybrid-71k
    res = CliRunner().invoke(quality, ["--pitfalls", "--model", "bge-v2-m3"])
    assert res.exit_code == 2 and "drop --stage/--model" in res.output
