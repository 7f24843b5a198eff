"""The rehearsal's cost step on a hand-made rehearsal folder (journal + first-stage record): stand-in blocks,
the plan's server prices, "price missing" for the API and LLM prices, and the tokenizer refusal reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.costs.section import build_costs
from analysis.inputs.trec import read_run_table, write_run
from analysis.stats.metrics import Judgments, curves_table
from bench.core.journal import Journal
from bench.core.plan import WARMUP_CALLS
from bench.rehearse.costs import rehearsal_costs, standin_blocks

STAGE = "vector-71k"
QIDS = [f"q{i:02d}" for i in range(25)]


@pytest.fixture
def rehearsal(tmp_path: Path) -> Path:
    d = tmp_path / "reh"
    with Journal(d / "journal.jsonl") as j:
        for i, q in enumerate(QIDS):
            j.append(
                {
                    "stage": STAGE,
                    "model": "minilm-standin",
                    "depth": 20,
                    "qid": q,
                    "status": "ok",
                    "latency_ns": (1_000_000 if i < WARMUP_CALLS else 40_000_000),
                    "utc": "2026-11-30T19:00:00Z",
                }
            )
    (d / "first-stage").mkdir()
    (d / "first-stage" / f"{STAGE}.json").write_text(
        json.dumps({"latency": {"per_query_client_ms": [5.0] * len(QIDS)}}), encoding="utf-8"
    )
    return d


def test_standin_blocks_leave_out_the_warm_up(rehearsal: Path) -> None:
    blocks = standin_blocks(rehearsal, [STAGE], QIDS)
    kinds = sorted((b.kind, b.target) for b in blocks)
    assert kinds == [("cpu", "minilm-standin"), ("first-stage", STAGE), ("gpu", "minilm-standin")]
    gpu = next(b for b in blocks if b.kind == "gpu")
    assert len(gpu.samples) == len(QIDS) - WARMUP_CALLS and gpu.warmup_query_ids == tuple(QIDS[:WARMUP_CALLS])
    assert {s.ns for s in gpu.samples} == {40_000_000} and not gpu.published


def test_plan_prices_and_missing_api_and_llm_prices(rehearsal: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_MODELS_DIR", str(rehearsal / "no-models"))
    runs = rehearsal / "runs"
    docs = [f"d{r}" for r in range(20)]
    write_run(
        runs / "first-stage" / f"{STAGE}.trec",
        {q: [(d, 20.0 - r) for r, d in enumerate(docs)] for q in QIDS},
        f"first-stage/{STAGE}",
    )
    reranked = ["d7", *[d for d in docs if d != "d7"]]  # the relevant d7 moves from rank 8 to rank 1
    write_run(
        runs / STAGE / "minilm-standin@20.trec",
        {q: [(d, 20.0 - r) for r, d in enumerate(reranked)] for q in QIDS},
        f"{STAGE}/minilm-standin@20",
    )
    quality = {
        STAGE: {
            "first_stage": {"run": f"first-stage/{STAGE}.trec", "means": {"ndcg@10": 0.3}},
            "runs": [
                {
                    "model": "minilm-standin",
                    "depth": 20,
                    "run": f"{STAGE}/minilm-standin@20.trec",
                    "sha256": "0" * 64,
                    "means": {"ndcg@10": 1.0},
                    "intervals": {"ndcg@10": [1.0, 1.0]},
                    "flagged": False,
                }
            ],
        }
    }
    inputs = rehearsal_costs(
        rehearsal, [STAGE], QIDS, {}, root=rehearsal
    )  # no prices.toml there: none entered
    assert inputs.allow_missing and "context calculation refused" in inputs.notes[1]
    qrels = {q: {"d7": 1} for q in QIDS}
    judgments = Judgments.from_qrels(qrels)
    curves = {
        rel: curves_table(judgments, read_run_table(runs / rel, qrels_qids=judgments.qids))
        for rel in (f"first-stage/{STAGE}.trec", f"{STAGE}/minilm-standin@20.trec")
    }
    costs = build_costs(quality, curves, qrels, inputs)
    gpu = next(o for o in costs["options"] if o["machine"] == "GPU")
    # 40 ms per call: capacity at 50 % = 2,592,000 x 0.5 / 0.04 = 32,400,000; GEX45 month 231.4166... EUR
    assert gpu["eur_per_1000"] == pytest.approx(1000 * (212.30 + 1.70 + 209 / 12) / 32_400_000, rel=1e-12)
    assert gpu["live"]["p95_ms"] == pytest.approx(45.0) and gpu["live"]["fits"] is True
    cpu = next(o for o in costs["options"] if o["machine"] == "CPU fp32")
    assert cpu["eur_per_1000"] is None and cpu["missing"] == ["CCX33 IPv4 add-on"]
    assert gpu["break_even"]["voyage-rerank-3"]["live"]["status"] == "no API run"
    (ctx,) = costs["context"]
    assert (ctx["k_hit"], ctx["k_recall"], ctx["k"], ctx["saved_passages"]) == (8, 8, 8, 3)
    assert ctx["mean_passage_tokens"] is None and ctx["llms"] == {}
    assert any("reference LLM price" in m for m in costs["missing"])
    assert any("mean passage tokens" in m for m in costs["missing"])
    assert "CCX33: IPv4 add-on" in costs["missing"] and costs["allow_missing"] is True


def test_the_rehearsals_latency_blocks_are_used_and_priced_both_ways(rehearsal: Path) -> None:
    from tests.analysis.costs.blocks import block, write_blocks

    write_blocks(
        rehearsal / "latency",
        [
            block(
                "cpu", "minilm-standin", 20, dict.fromkeys(QIDS, 80.0), published=False, session="rehearsal"
            ),
            block("first-stage", STAGE, 100, dict.fromkeys(QIDS, 5.0), published=False, session="rehearsal"),
        ],
    )
    inputs = rehearsal_costs(rehearsal, [STAGE], QIDS, {}, root=rehearsal)
    kinds = sorted((b.kind, b.target) for b in inputs.blocks)
    assert kinds == [("cpu", "minilm-standin"), ("first-stage", STAGE), ("gpu", "minilm-standin")]
    assert all(s.ns == 80_000_000 for b in inputs.blocks if b.kind == "gpu" for s in b.samples)
    assert "latency blocks" in inputs.latency_label
