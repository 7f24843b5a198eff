"""Ties said aloud: `analysis metrics` warns when tied scores make the rank order differ
from trec_eval's and prints both nDCG@10 values; `check-pytrec` says NOT COMPARED, not PASS, when no query
could be compared in pytrec_eval's own order. Both compared with pytrec_eval itself."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from analysis.cli import cli
from analysis.inputs.trec import read_run_table, write_run
from analysis.reporting import pytrec_check as pc
from analysis.reporting.pytrec_check import compare_with_pytrec_eval, pytrec_ndcg10
from analysis.stats.metrics import Judgments, evaluate_table
from analysis.stats.ties import tied_query_mask, trec_eval_order

pytrec_eval = pytest.importorskip("pytrec_eval")

QRELS = {"q1": {"a": 1, "b": 0, "c": 2}, "q2": {"x": 1, "y": 1}, "q3": {"m": 3}}


def _qrels_file(tmp_path: Path) -> Path:
    path = tmp_path / "qrels.tsv"
    path.write_text("".join(f"{q} 0 {d} {r}\n" for q in QRELS for d, r in QRELS[q].items()))
    return path


def _random_tied_run(rng: random.Random) -> dict[str, list[tuple[str, float]]]:
    run = {}
    for q, judged in QRELS.items():
        docs = [*judged, *(f"u{i}" for i in range(rng.randint(0, 12)))]
        rng.shuffle(docs)
        scores = sorted((float(rng.randint(0, 3)) for _ in docs), reverse=True)  # many ties
        run[q] = list(zip(docs, scores, strict=True))
    return run


def test_trec_eval_order_is_pytrec_evals_own(tmp_path: Path) -> None:
    """Over random runs with many ties: our nDCG@10 in trec_eval's order equals pytrec_eval on the raw scores,
    and in the rank order equals pytrec_eval on rank-faithful scores."""
    rng = random.Random(32)
    judgments = Judgments.from_qrels(QRELS)
    reordered_seen = 0
    for i in range(60):
        path = tmp_path / f"r{i}.trec"
        write_run(path, _random_tied_run(rng), "t")
        table = read_run_table(path)
        alt = trec_eval_order(table)
        reordered_seen += bool(alt.reordered)
        raw = pytrec_ndcg10(QRELS, table, rank_faithful=False)
        theirs = evaluate_table(judgments, alt.table, ["ndcg@10"])["ndcg@10"].tolist()
        assert theirs == pytest.approx([raw[q] for q in judgments.qids], abs=1e-12)
        faithful = pytrec_ndcg10(QRELS, table)
        ours = evaluate_table(judgments, table, ["ndcg@10"])["ndcg@10"].tolist()
        assert ours == pytest.approx([faithful[q] for q in judgments.qids], abs=1e-12)
        tied = {q for q, t in zip(table.qids, tied_query_mask(table), strict=True) if t}
        assert set(alt.reordered) <= tied
    assert reordered_seen > 30  # the law was tested where the orders differ


def test_metrics_warns_with_both_values_only_when_the_orders_differ(tmp_path: Path) -> None:
    qrels = _qrels_file(tmp_path)
    tied = tmp_path / "tied.trec"
    # q1: a (relevant) before b at the same score: trec_eval puts b first (docid descending)
    write_run(tied, {"q1": [("a", 1.0), ("b", 1.0), ("c", 0.5)], "q2": [("x", 2.0), ("y", 1.0)]}, "t")
    result = CliRunner().invoke(cli, ["metrics", "--qrels", str(qrels), "--run", str(tied), "--json"])
    assert result.exit_code == 0, result.output
    warning = [x for x in result.stderr.splitlines() if "warning" in x]
    assert len(warning) == 1 and "1 query (first 'q1')" in warning[0], result.stderr
    ours, theirs = (
        float(v)
        for v in re.findall(
            r"nDCG@10 ([0-9.]+) in the file's rank order.*, ([0-9.]+) "
            r"in trec_eval's order",
            warning[0],
        )[0]
    )
    raw = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg_cut_10"}).evaluate(
        {"q1": {"a": 1.0, "b": 1.0, "c": 0.5}, "q2": {"x": 2.0, "y": 1.0}}
    )
    reference = sum(raw[q]["ndcg_cut_10"] if q in raw else 0.0 for q in QRELS) / len(QRELS)
    assert theirs == pytest.approx(reference, abs=1e-15) and ours > theirs
    assert '"ndcg@10": ' + repr(ours) in result.stdout  # the number reported is the rank order's
    calm = tmp_path / "calm.trec"  # ties already in trec_eval's order (b before a): no warning
    write_run(calm, {"q1": [("b", 1.0), ("a", 1.0), ("c", 0.5)], "q2": [("x", 2.0), ("y", 1.0)]}, "t")
    result = CliRunner().invoke(cli, ["metrics", "--qrels", str(qrels), "--run", str(calm)])
    assert result.exit_code == 0 and "warning" not in result.stderr, result.stderr


def test_float32_ties_are_ties_for_pytrec_eval(tmp_path: Path) -> None:
    """pytrec_eval holds scores as 32-bit floats: 1.0 + 1e-9 ties with 1.0 there. check-pytrec used to compare
    such a query in pytrec_eval's own order as if untied, and FAILed a correct run."""
    run = {"q1": [("a", 1.0 + 1e-9), ("b", 1.0), ("c", 0.5)], "q2": [("x", 2.0), ("y", 1.0)]}
    evaluator = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg_cut_10"})
    raw = evaluator.evaluate({q: dict(r) for q, r in run.items()})
    judgments = Judgments.from_qrels(QRELS)
    path = tmp_path / "f32.trec"
    write_run(path, run, "t")
    ours = evaluate_table(judgments, read_run_table(path), ["ndcg@10"])["ndcg@10"].tolist()
    assert raw["q1"]["ndcg_cut_10"] != pytest.approx(ours[0])  # pytrec_eval put b first: it saw a tie
    result = compare_with_pytrec_eval(QRELS, read_run_table(path))
    assert result.queries_with_ties == 1 and result.own_order_run_queries == 1 and result.verdict == "PASS"
    out = CliRunner().invoke(cli, ["check-pytrec", "--qrels", str(_qrels_file(tmp_path)), "--run", str(path)])
    assert out.exit_code == 0 and "verdict                      PASS" in out.output, out.output


def test_check_pytrec_says_not_compared_when_every_query_is_tied(tmp_path: Path) -> None:
    path = tmp_path / "all-tied.trec"
    write_run(path, {"q1": [("a", 1.0), ("b", 1.0)], "q2": [("y", 0.0), ("x", 0.0)]}, "t")
    out = CliRunner().invoke(cli, ["check-pytrec", "--qrels", str(_qrels_file(tmp_path)), "--run", str(path)])
    assert out.exit_code == 1, out.output
    assert "verdict                      NOT COMPARED" in out.output and "PASS" not in out.output
    assert f"{path}: NOT COMPARED" in out.output and "Fix:" in out.output
    # q3 is missing from the run: 0 on both sides in any order, so it does not count as compared
    result = compare_with_pytrec_eval(QRELS, read_run_table(path))
    assert result.own_order_queries == 1 and result.own_order_run_queries == 0 and result.passed


def _deep_run(
    rng: random.Random, qrels: dict[str, dict[str, int]], rising: bool
) -> dict[str, list[tuple[str, float]]]:
    """Up to 30 rows a query, scores drawn from a few values and their float32 twins (1.0 + 1e-9 ties with 1.0
    in pytrec_eval), in rank order (never rising) or, with ``rising``, shuffled."""
    levels = [0.25, 0.5, 0.5 + 1e-9, 1.0, 1.0 + 1e-9, 2.0]
    run = {}
    for q, judged in qrels.items():
        docs = [*judged, *(f"{q}-u{i}" for i in range(rng.randint(0, 30 - len(judged))))]
        rng.shuffle(docs)
        scores = [rng.choice(levels) for _ in docs]
        if not rising:
            scores.sort(reverse=True)
        run[q] = list(zip(docs, scores, strict=True))
    return run


@pytest.mark.parametrize("rising", [False, True])
def test_pytrec_ndcg10_hands_over_only_rows_within_the_cutoff(rising: bool) -> None:
    """pytrec_ndcg10 gives pytrec_eval only the rows that can stand among its first 10 (the first 10 by rank;
    by score: every row at least as high as the tenth, as a float32, so the tenth's ties stay): over random
    deep runs with ties at the cutoff, each query's value is pytrec_eval's on the whole run, in both
    orders."""
    rng = random.Random(77)
    qrels = {f"q{i}": {f"q{i}-j{k}": rng.randint(0, 3) for k in range(rng.randint(1, 12))} for i in range(40)}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"})
    trimmed = kept_past_tenth = 0
    for _ in range(15):
        run = _deep_run(rng, qrels, rising)
        whole_raw = evaluator.evaluate({q: dict(rows) for q, rows in run.items()})
        ranked = {q: {d: -float(r) for r, (d, _) in enumerate(rows)} for q, rows in run.items()}
        whole_faithful = evaluator.evaluate(ranked)
        raw = pytrec_ndcg10(qrels, run, rank_faithful=False, evaluator=evaluator)
        faithful = pytrec_ndcg10(qrels, run, evaluator=evaluator)
        assert raw == {q: whole_raw[q]["ndcg_cut_10"] for q in qrels}
        assert faithful == {q: whole_faithful[q]["ndcg_cut_10"] for q in qrels}
        handed = pc._scored(pc._as_table(run), rank_faithful=False)
        trimmed += sum(len(run[q]) - len(handed[q]) for q in run)
        kept_past_tenth += sum(len(handed[q]) > 10 for q in run)
        assert all(len(rows) <= 10 for rows in pc._scored(pc._as_table(run), rank_faithful=True).values())
        f32 = {q: [np.float32(s) for _, s in rows] for q, rows in run.items()}
        tied = tied_query_mask(pc._as_table(run)).tolist()
        assert tied == [len(set(f32[q])) < len(f32[q]) for q in sorted(run)]  # wherever the tie stands
    assert trimmed > 1000 and kept_past_tenth > 20  # rows were left out, and ties at the tenth kept
