"""The context calculation: Hit@k/Recall@k curves agree with analysis.stats.metrics; the smallest k by
hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analysis.costs.context import curves, saved_eur_per_1000, smallest_k
from analysis.stats.metrics import Judgments, evaluate_table
from analysis.stats.metrics import _as_table as as_table

QRELS = {"q1": {"r1": 1, "r2": 1, "n1": 0}, "q2": {"r3": 1}, "q3": {"r4": 1}}


def ranked(qid: str, relevant_at: dict[int, str], depth: int = 20) -> list[tuple[str, float]]:
    return [(relevant_at.get(rank, f"{qid}-x{rank}"), float(depth - rank)) for rank in range(1, depth + 1)]


# first stage: q1's relevant passages at ranks 3 and 12, q2's at 8, q3's never in the top 20
FIRST = {"q1": ranked("q1", {3: "r1", 12: "r2"}), "q2": ranked("q2", {8: "r3"}), "q3": ranked("q3", {})}
# reranked: q1 both at ranks 1 and 2, q2 at 1, q3 still missing
RERANKED = {"q1": ranked("q1", {1: "r1", 2: "r2"}), "q2": ranked("q2", {1: "r3"}), "q3": ranked("q3", {})}


def test_smallest_k_by_hand() -> None:
    j = Judgments.from_qrels(QRELS)
    first, rer = curves(j, as_table(FIRST), 20), curves(j, as_table(RERANKED), 20)
    assert first.hits.tolist()[:9] == [0, 0, 1, 1, 1, 1, 1, 2, 2]
    result = smallest_k(first, rer, reference_k=5)
    assert result["reranked_hit"] == pytest.approx(2 / 3) and result["reranked_recall"] == pytest.approx(
        2 / 3
    )
    # Hit@5 of the reranked run (2 of 3 queries) is reached at k = 8; Recall@5 (2/3) only at k = 12
    assert (result["k_hit"], result["k_recall"], result["k"], result["saved_passages"]) == (8, 12, 12, 7)


def test_not_reached_within_the_depth() -> None:
    j = Judgments.from_qrels(QRELS)
    better = dict(RERANKED, q3=ranked("q3", {1: "r4"}))
    result = smallest_k(curves(j, as_table(FIRST), 20), curves(j, as_table(better), 20), reference_k=5)
    assert result["k"] is None and result["saved_passages"] is None and result["searched_to_k"] == 20


def test_saved_cost() -> None:
    # 7 passages x 150 tokens x 3 EUR per million x 1000 queries = 3.15 EUR
    assert saved_eur_per_1000(7, 150.0, 3.0) == pytest.approx(3.15, rel=1e-12)


def test_curves_agree_with_analysis_metrics(miracl_qrels: dict[str, dict[str, int]]) -> None:
    rng = np.random.default_rng(3)
    qids = sorted(miracl_qrels)[:60]
    docs = sorted({d for q in qids for d in miracl_qrels[q]})
    run = {}
    for q in qids[:-3]:  # three qrels queries missing from the run score 0
        picked = rng.choice(len(docs), size=100, replace=False)
        run[q] = [(docs[i], float(100 - r)) for r, i in enumerate(picked)]
    j = Judgments.from_qrels({q: miracl_qrels[q] for q in qids})
    table = as_table(run)
    c = curves(j, table, 100)
    ref = evaluate_table(j, table, ("hit@5", "hit@10", "recall@5", "recall@10", "recall@20", "recall@100"))
    assert c.hit_at(5) == float(ref["hit@5"].mean()) and c.hit_at(10) == float(ref["hit@10"].mean())
    assert c.hits[9] > 0
    for k in (5, 10, 20, 100):
        assert c.recall[k - 1] == pytest.approx(float(ref[f"recall@{k}"].mean()), abs=1e-12)


@pytest.mark.parametrize("reader", ["fast", "reference"])
def test_the_curves_kept_from_the_read_equal_a_fresh_read(
    reader: str,
    tmp_path: Path,
    miracl_qrels: dict[str, dict[str, int]],
    miracl_qrels_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The report keeps each run's curves when it reads the run (analysis.reporting.study.RunResult.curves)
    and the costs section uses them: bit for bit what reading the run again gives, with either reader."""
    from analysis.inputs.trec import read_run_table
    from analysis.reporting.study import load_stages
    from analysis.simulation.synthetic import write_study

    monkeypatch.setenv("ANALYSIS_TREC_READER", reader)
    runs = tmp_path / "runs"
    write_study(
        runs, miracl_qrels, stages=["hybrid-71k"], models={"bge-v2-m3": 1.5}, depths=(20,), tails=True
    )
    j = Judgments.from_qrels(miracl_qrels)
    (stage,) = load_stages(runs, j)
    for r in (stage.first_stage, *stage.runs):
        fresh = curves(j, read_run_table(runs / r.path, qrels_qids=j.qids), 100)
        assert r.curves is not None and r.curves.queries == fresh.queries
        assert np.array_equal(r.curves.hits, fresh.hits) and np.array_equal(r.curves.recall, fresh.recall)
