"""Metrics against pytrec_eval on the real MIRACL-de dev qrels, and by hand (analysis.stats.metrics)."""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytrec_eval

from analysis.inputs.trec import read_run, write_run
from analysis.reporting.pytrec_check import compare_with_pytrec_eval
from analysis.stats.metrics import (
    MEASURES,
    Judgments,
    _as_table,
    evaluate,
    mean_scores,
    scored_indexed,
    scored_table,
)
from analysis.stats.ranking import rank_by_score

Run = dict[str, list[tuple[str, float]]]
Qrels = dict[str, dict[str, int]]
Pool = np.ndarray[Any, np.dtype[np.str_]]


def _pool(qrels: Qrels) -> Pool:
    # an array, made once per run: rng.choice turns a list into this same array on every call (most of the
    # test's time), and draws the same passages from either
    return np.array(sorted({d for v in qrels.values() for d in v}))


def _candidates(qrels: Qrels, q: str, rng: np.random.Generator, pool: Pool, extra: int) -> list[str]:
    # judged passages of the query, judged passages of other queries (unjudged here) and unseen ids
    own = list(qrels[q])
    other = [str(x) for x in rng.choice(pool, size=extra, replace=False)]
    unseen = [f"unseen-{q}-{i}" for i in range(extra)]
    cand = list(dict.fromkeys(own + other + unseen))
    rng.shuffle(cand)
    return cand


def _random(qrels: Qrels, rng: np.random.Generator, pool: Pool) -> Run:
    run = {}
    for q in qrels:
        cand = _candidates(qrels, q, rng, pool, int(rng.integers(0, 120)))
        run[q] = rank_by_score(cand, rng.standard_normal(len(cand)).tolist())
    return run


def _perfect(qrels: Qrels, rng: np.random.Generator, pool: Pool) -> Run:
    run = {}
    for q in qrels:
        cand = _candidates(qrels, q, rng, pool, 30)
        run[q] = rank_by_score(cand, [qrels[q].get(d, -1) + rng.random() * 0.5 for d in cand])
    return run


def _reversed(qrels: Qrels, rng: np.random.Generator, pool: Pool) -> Run:
    run = _perfect(qrels, rng, pool)
    return {q: [(d, -s) for d, s in reversed(v)] for q, v in run.items()}


def _partial(qrels: Qrels, rng: np.random.Generator, pool: Pool) -> Run:
    run = _random(qrels, rng, pool)
    keep = rng.random(len(run)) < 0.6
    return {q: v[: int(rng.integers(1, 15))] for (q, v), k in zip(run.items(), keep, strict=True) if k}


def _ties(qrels: Qrels, rng: np.random.Generator, pool: Pool) -> Run:
    run = {}
    for q in qrels:
        cand = _candidates(qrels, q, rng, pool, 60)
        run[q] = rank_by_score(cand, rng.integers(0, 3, len(cand)).astype(float).tolist())
    return run


GENERATORS: dict[str, Callable[[Qrels, np.random.Generator, list[str]], Run]] = {
    "random": _random,
    "perfect": _perfect,
    "reversed": _reversed,
    "partial": _partial,
    "ties": _ties,
}


def _trec_faithful(run: Run) -> dict[str, dict[str, float]]:
    return {q: {d: float(-i) for i, (d, _) in enumerate(v)} for q, v in run.items() if v}


@pytest.mark.parametrize("kind", sorted(GENERATORS))
@pytest.mark.parametrize("seed", range(4))
def test_against_pytrec_eval(miracl_qrels: Qrels, kind: str, seed: int) -> None:
    rng = np.random.default_rng(1000 * seed + len(kind))
    run = GENERATORS[kind](miracl_qrels, rng, _pool(miracl_qrels))
    ours = evaluate(miracl_qrels, run)
    measures = {
        "ndcg_cut_10",
        "recall_5",
        "recall_10",
        "recall_20",
        "recall_100",
        "success_5",
        "success_10",
        "recip_rank",
    }
    ref = pytrec_eval.RelevanceEvaluator(miracl_qrels, measures).evaluate(_trec_faithful(run))
    names = {
        "ndcg@10": "ndcg_cut_10",
        "recall@5": "recall_5",
        "recall@10": "recall_10",
        "recall@20": "recall_20",
        "recall@100": "recall_100",
        "hit@5": "success_5",
        "hit@10": "success_10",
    }
    for q in miracl_qrels:
        for ours_name, ref_name in names.items():
            expected = ref[q][ref_name] if q in ref else 0.0
            assert ours[ours_name][q] == pytest.approx(expected, abs=1e-12), (q, ours_name)
        rr = ref[q]["recip_rank"] if q in ref else 0.0
        assert ours["mrr@10"][q] == pytest.approx(rr if rr >= 0.1 - 1e-12 else 0.0, abs=1e-12)
    # condensed nDCG'@10 = pytrec_eval nDCG@10 on the run with unjudged passages removed
    condensed = {q: [(d, s) for d, s in v if d in miracl_qrels[q]] for q, v in run.items()}
    ref_c = pytrec_eval.RelevanceEvaluator(miracl_qrels, {"ndcg_cut_10"}).evaluate(_trec_faithful(condensed))
    for q in miracl_qrels:
        expected = ref_c[q]["ndcg_cut_10"] if q in ref_c else 0.0
        assert ours["ndcg'@10"][q] == pytest.approx(expected, abs=1e-12)
    # judged@10 and ceiling by plain Python
    for q in miracl_qrels:
        top = [d for d, _ in run.get(q, [])[:10]]
        assert ours["judged@10"][q] == sum(d in miracl_qrels[q] for d in top) / 10
        ideal = sorted((miracl_qrels[q].get(d, 0) for d, _ in run.get(q, [])[:100]), reverse=True)[:10]
        best = sorted(miracl_qrels[q].values(), reverse=True)[:10]
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal) if g > 0)
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(best) if g > 0)
        assert ours["ceiling"][q] == pytest.approx(dcg / idcg, abs=1e-12)
    # plan check 2
    cmp = compare_with_pytrec_eval(miracl_qrels, run)
    assert cmp.max_abs_diff < 1e-9 and cmp.passed
    assert cmp.queries == 305
    # the report's columnar form (docids as judged indices, only their rows scored) gives the string form's
    # values bit for bit, also beside queries the qrels lack (before, among and after the qrels' ones)
    judgments = Judgments.from_qrels(miracl_qrels)
    extra = {q: run.get(sorted(run)[0], [("unseen", 1.0)]) for q in ("!first", "555-between", "~last")}
    for table in (_as_table(run), _as_table({**run, **extra})):
        doc = np.array([judgments.doc_index.get(d, -1) for d in table.docids], dtype=np.int64)
        values, curves = scored_indexed(judgments, table.qids, table.offsets, doc)
        want_values, want_curves = scored_table(judgments, table)
        assert values.keys() == want_values.keys()
        assert all(values[m].tobytes() == want_values[m].tobytes() for m in values)
        assert curves.hits.tobytes() == want_curves.hits.tobytes()
        assert curves.recall.tobytes() == want_curves.recall.tobytes()


def test_tie_difference_is_documented(miracl_qrels: Qrels) -> None:
    # trec_eval breaks ties by docid descending: a tied run is evaluated differently there.
    q = next(iter(sorted(miracl_qrels)))
    rel = next(d for d, r in miracl_qrels[q].items() if r > 0)
    assert rel > "000-unjudged"
    run = {q: [("000-unjudged", 1.0), (rel, 1.0)]}  # our order: first-stage order, unjudged first
    cmp = compare_with_pytrec_eval({q: miracl_qrels[q]}, run)
    assert cmp.ours == pytest.approx(cmp.pytrec_eval, abs=1e-15)
    assert cmp.ours == pytest.approx(1 / math.log2(3) / _idcg(miracl_qrels[q]), abs=1e-15)
    # trec_eval puts the larger docid (the relevant one) first
    assert cmp.pytrec_eval_raw == pytest.approx(1 / _idcg(miracl_qrels[q]), abs=1e-15)
    assert cmp.queries_with_ties == 1


def _idcg(judged: dict[str, int]) -> float:
    best = sorted(judged.values(), reverse=True)[:10]
    return sum(g / math.log2(i + 2) for i, g in enumerate(best) if g > 0)


def test_hand_example() -> None:
    qrels = {"q": {"a": 1, "b": 0, "c": 2}, "empty": {"x": 0}, "absent": {"y": 1}}
    run = {"q": [("u", 3.0), ("b", 2.0), ("c", 1.0)], "empty": [("x", 1.0)]}
    v = evaluate(qrels, run)
    idcg = 2 + 1 / math.log2(3)
    assert v["ndcg@10"]["q"] == pytest.approx((2 / math.log2(4)) / idcg, abs=1e-15)
    assert v["ndcg'@10"]["q"] == pytest.approx((2 / math.log2(3)) / idcg, abs=1e-15)
    assert v["hit@5"]["q"] == 1.0 and v["recall@5"]["q"] == 0.5 and v["mrr@10"]["q"] == pytest.approx(1 / 3)
    assert v["judged@10"]["q"] == pytest.approx(0.2)
    assert v["ceiling"]["q"] == pytest.approx(2 / idcg)
    for m in MEASURES:
        assert v[m]["absent"] == 0.0 and v[m]["empty"] == (0.1 if m == "judged@10" else 0.0)
    means = mean_scores(qrels, run)
    assert means["hit@5"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="unknown measure"):
        evaluate(qrels, run, measures=["P@5"])


def test_inputs_not_modified(miracl_qrels: Qrels) -> None:
    run = {"x": [("a", 1.0)]}
    before = repr(run)
    evaluate({"x": {"a": 1}}, run)
    assert repr(run) == before


def _shared_word_counts(docs: list[set[str]], queries: list[set[str]]) -> np.ndarray:
    """``len(query & doc)`` for every query (rows) and doc (columns), as one sparse 0/1 matrix product."""
    import scipy.sparse  # heavy: only here (tests/hygiene/test_collection_imports)

    vocab: dict[str, int] = {}

    def incidence(sets: list[set[str]]) -> Any:
        cols = [vocab.setdefault(w, len(vocab)) for s in sets for w in s]
        indptr = np.cumsum([0] + [len(s) for s in sets])
        return scipy.sparse.csr_matrix((np.ones(len(cols), dtype=np.int64), cols, indptr))

    d, q = incidence(docs), incidence(queries)
    d.resize(d.shape[0], len(vocab))
    q.resize(q.shape[0], len(vocab))
    return (q @ d.T).toarray()


def test_real_lexical_run_with_ties(miracl_qrels: Qrels, miracl_qrels_path: Path, tmp_path: Path) -> None:
    """A real run: the 305 German dev queries against the 3,103 real judged passages, scored by the number
    of shared lower-cased words (integer scores: many ties, broken by passage order in docs.csv)."""
    pool = miracl_qrels_path.parent / "colbert-kit-judged-pool"
    with (pool / "docs.csv").open(encoding="utf-8", newline="") as f:
        docs = [(row["doc_id"], set(re.findall(r"\w+", row["text"].lower()))) for row in csv.DictReader(f)]
    with (pool / "queries.csv").open(encoding="utf-8", newline="") as f:
        queries = {row["query_id"]: set(re.findall(r"\w+", row["text"].lower())) for row in csv.DictReader(f)}
    assert len(docs) == 3103 and len(queries) == 305
    shared = _shared_word_counts([w for _, w in docs], list(queries.values()))  # len(words & w) per pair
    run = {}
    for q, counts in zip(queries, shared, strict=True):
        ranked = rank_by_score([d for d, _ in docs], counts.astype(np.float64).tolist())
        run[q] = ranked[:100]
    write_run(tmp_path / "lexical.trec", run, "lexical")
    cmp = compare_with_pytrec_eval(miracl_qrels, read_run(tmp_path / "lexical.trec", qrels_qids=miracl_qrels))
    assert cmp.passed and cmp.max_abs_diff <= 1e-12
    assert cmp.queries_with_ties == 305
    assert 0.05 < cmp.ours < 0.9
    # trec_eval's own tie-breaking (docid descending) gives a different number on the same scores
    assert cmp.pytrec_eval_raw != cmp.ours
