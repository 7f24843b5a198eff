"""Model selection (rated / not rated, per-depth) and the determinism / dtype verdict inputs."""

from __future__ import annotations

import math
from pathlib import Path

from analysis.trec import write_run
from bench.equality.results import write_result
from bench.quality.commands import lock_names, per_depth_models, rated
from bench.quality.verdicts import compare_runs


def test_unrated_models_are_skipped_with_reason(tmp_path: Path) -> None:
    write_result("bge-v2-m3", {"model": "bge-v2-m3", "rated": True, "reason": "spearman >= 0.99"}, tmp_path)
    write_result("gte-base", {"model": "gte-base", "rated": False, "reason": "reference failed"}, tmp_path)
    keep, skipped, outcomes = rated(["bge-v2-m3", "gte-base", "jina-v3.5"], tmp_path)
    assert keep == ["bge-v2-m3"]
    assert skipped["gte-base"] == "reference failed"
    assert "bench check-adapters jina-v3.5" in skipped["jina-v3.5"]
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
    ok = compare_runs("determinism", tmp_path / "a", tmp_path / "b", stage="hybrid-71k", models=["m"],
                      depths=[100], qrels_path=qrels)  # fmt: skip
    assert len(ok) == 1 and ok[0]["passed"] and ok[0]["difference_points"] == 0.0
    bad = compare_runs("dtype", tmp_path / "a", tmp_path / "c", stage="hybrid-71k", models=["m"],
                       depths=[100], qrels_path=qrels, qids=["q2"])  # fmt: skip
    assert bad[0]["queries"] == 1 and not bad[0]["passed"]
    assert abs(bad[0]["first"] - 1 / math.log2(3)) < 1e-12  # q2: relevant passage at rank 2
