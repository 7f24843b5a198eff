"""The rehearsal's int8 comparison (``bench.rehearse.int8.compare``) with two fake rerankers: timing at
k = 20 and 100 for both, Spearman against scipy, nDCG@10 and top-10 overlap from the k = 100 calls."""

from __future__ import annotations

import pytest

from analysis.stats.metrics import evaluate
from analysis.stats.ranking import rank_by_score
from bench.rehearse import int8 as step
from tests.support.fakes import FakeReranker


def fake(name: str, noise: float) -> FakeReranker:
    """Scores: the passage's number ("q03-17" -> 17) plus ``noise`` times a sine (deterministic)."""
    return FakeReranker(name, score="passage_number", noise=noise)


def test_compare_times_both_models_and_scores_agreement() -> None:
    from scipy.stats import spearmanr  # heavy: not at collection

    queries = {f"q{i:02d}": "x" * i for i in range(25)}
    candidates = {q: [f"{q}-{d}" for d in range(120)] for q in queries}
    texts = {d: d for ds in candidates.values() for d in ds}
    qrels = {q: {f"{q}-{d}": 1 for d in range(0, 120, 9)} for q in queries}
    fp32, int8 = fake("fp32", 0.0), fake("int8", 3.0)
    rec = step.compare(fp32, int8, queries, candidates, texts, qrels)
    qids = sorted(queries)[: step.QUERIES]
    assert rec["queries"] == qids
    # per k: WARMUP untimed calls, then one timed call per query
    sizes = [20] * (step.WARMUP + 20) + [100] * (step.WARMUP + 20)
    assert [c["n"] for c in fp32.calls] == [c["n"] for c in int8.calls] == sizes
    assert {k: v["n"] for k, v in rec["latency"]["int8"].items()} == {"20": 20, "100": 20}
    q = qids[3]
    docs = candidates[q][:100]
    a, b = fp32.score(queries[q], [texts[d] for d in docs]), int8.score(queries[q], [texts[d] for d in docs])
    assert rec["per_query"][q]["spearman"] == pytest.approx(
        spearmanr(a.scores, b.scores).statistic, abs=1e-12
    )
    assert (rec["per_query"][q]["spearman"] >= 0.99) == (q not in rec["below_0.99"])
    assert rec["spearman_min"] == min(v["spearman"] for v in rec["per_query"].values())
    ra, rb = rank_by_score(docs, a.scores.tolist()), rank_by_score(docs, b.scores.tolist())
    assert rec["per_query"][q]["top10_overlap"] == len({d for d, _ in ra[:10]} & {d for d, _ in rb[:10]})
    ndcg = evaluate({q: qrels[q]}, {q: ra}, measures=["ndcg@10"])["ndcg@10"][q]
    assert rec["ndcg@10"]["fp32"]["per_query"][q] == pytest.approx(ndcg, abs=1e-12)
    assert rec["speedup_p50"]["100"] > 0 and len(rec["loadavg"]["before"]) == 3
    assert any(line.startswith("  k=100: p50/p95 fp32") for line in step.summary_lines(rec))


def test_with_the_latency_step_fp32_is_not_timed_again() -> None:
    queries = {f"q{i:02d}": "x" * i for i in range(6)}
    candidates = {q: [f"{q}-{d}" for d in range(120)] for q in queries}
    texts = {d: d for ds in candidates.values() for d in ds}
    qrels = {q: {f"{q}-{d}": 1 for d in range(0, 120, 9)} for q in queries}
    sampled = ["q04", "q01", "q03"]
    fp32_ns = {k: {q: 1_000_000 * (i + 1) * k for i, q in enumerate(sampled)} for k in (20, 100)}
    fp32_run = {q: [(d, float(d.split("-")[1])) for d in reversed(candidates[q][:100])] for q in queries}
    int8 = fake("int8", 0.0)
    rec = step.compare_with_latency_step(
        int8, {"fp32_ns": fp32_ns, "query_ids": sampled}, fp32_run, queries, candidates, texts, qrels
    )
    assert rec["queries"] == sampled and rec["latency_ns"]["fp32"]["100"] == [100e6, 200e6, 300e6]
    assert rec["latency"]["fp32"]["20"]["p50_ms"] == pytest.approx(40.0)
    # the latency step's 5 warm-up calls, then 3
    assert [c["n"] for c in int8.calls] == [20] * (5 + 3) + [100] * (5 + 3)
    assert rec["spearman_min"] == pytest.approx(1.0)  # same ordering as the quality run's scores
    assert rec["ndcg@10"]["fp32"]["mean"] == pytest.approx(rec["ndcg@10"]["int8"]["mean"])


def test_precision_and_isa_stand_next_to_the_speed_up() -> None:
    """Int8.json and the step's lines say which precision and instruction set the speed-up is of."""
    queries = {f"q{i:02d}": "x" * i for i in range(4)}
    candidates = {q: [f"{q}-{d}" for d in range(120)] for q in queries}
    texts = {d: d for ds in candidates.values() for d in ds}
    rec = step.compare(fake("fp32", 0.0), fake("int8", 0.0), queries, candidates, texts, {})
    runtime = {
        "inference_precision": "f32",
        "int8_isa": "avx2",
        "threads": 2,
        "cpu": {"vnni": False, "bf16": False},
    }
    rec.update(step.precision_and_isa(runtime))
    assert (rec["inference_precision"], rec["int8_isa"], rec["cpu_vnni"]) == ("f32", "avx2", False)
    assert rec["openvino_runtime"]["threads"] == 2
    lines = step.summary_lines(rec)
    at = next(i for i, line in enumerate(lines) if line.startswith("  k=100:"))
    assert lines[at + 1] == "  int8 precision f32, int8 kernels on avx2 (CPU VNNI False, bf16 False)"
