"""The rehearsal's latency step on a small folder laid out as a rehearsal's (fake adapter, no model)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from analysis.inputs.trec import write_run
from analysis.latency import read_blocks
from bench.rehearse.latency import REHEARSAL_MODEL, REHEARSAL_MODELS, fp32_timings, latency_step
from tests.latency.fakes import ordered_fake


def make_rehearsal(root: Path, n_queries: int) -> tuple[dict[str, str], dict[str, str]]:
    queries = {f"{i:03d}": f"Frage {i}" for i in range(n_queries)}
    lists = {q: [(f"{q}#{j}", 100.0 - j) for j in range(100)] for q in queries}
    write_run(root / "runs/first-stage/vector-71k.trec", lists, tag="first-stage/vector-71k")
    # the quality run the step compares with: the fake's scores (minus the first-stage position)
    ref = {q: [(d, -float(j)) for j, (d, _) in enumerate(rows)] for q, rows in lists.items()}
    write_run(
        root / f"runs/vector-71k/{REHEARSAL_MODEL}@100.trec", ref, tag=f"vector-71k/{REHEARSAL_MODEL}@100"
    )
    lat = {
        "warmup_queries_discarded": 2,
        "per_query_ids": sorted(queries),
        "per_query_client_ms": [1.0] * n_queries,
        "per_query_server_ms": [0.5] * n_queries,
    }
    (root / "first-stage").mkdir()
    (root / "first-stage/vector-71k.json").write_text(
        json.dumps({"stage": "vector-71k", "mode": "rehearsal", "latency": lat})
    )
    texts = {d: f"Text {d}" for rows in lists.values() for d, _ in rows}
    return queries, texts


def test_step_measures_10_sampled_queries_at_k20_and_k100(tmp_path: Path) -> None:
    queries, texts = make_rehearsal(tmp_path, 30)
    fake = ordered_fake()
    assert REHEARSAL_MODELS == (REHEARSAL_MODEL, "bm25-standin")  # both timed in a rehearsal
    out = latency_step(
        tmp_path,
        queries,
        texts,
        "vector-71k",
        stream=io.StringIO(),
        log=lambda m: None,
        load=lambda m: fake,
        models=(REHEARSAL_MODEL,),
    )
    assert len(fake.calls) == 2 * (5 + 10)  # the rehearsal's budget: 5 warm-up and 10 measured calls per k
    assert sorted(out["fp32_ns"]) == [20, 100] and len(out["fp32_ns"][100]) == 10
    assert set(out["fp32_ns"][20]) == set(out["fp32_ns"][100]) == set(out["query_ids"])
    blocks = read_blocks(tmp_path / "latency")
    assert [(b.target, b.k, b.published) for b in blocks] == [
        ("minilm-standin", 20, False),
        ("minilm-standin", 100, False),
        ("vector-71k", 100, False),
    ]
    model_block = blocks[0]
    assert model_block.accuracy.status == "passed" and model_block.allow_busy and model_block.allow_unrated
    assert model_block.query_seed == 20261009 and len(model_block.warmup_query_ids) == 5
    assert {r["target"] for r in out["rows"]} == {"minilm-standin", "vector-71k"}
    again = latency_step(
        tmp_path,
        queries,
        texts,
        "vector-71k",
        stream=io.StringIO(),
        log=lambda m: None,
        load=lambda m: pytest.fail("a finished model must not be loaded again"),
        models=(REHEARSAL_MODEL,),
    )
    assert again["fp32_ns"] == out["fp32_ns"] == fp32_timings(tmp_path)


def test_step_with_fewer_queries_than_the_sample(tmp_path: Path) -> None:
    queries, texts = make_rehearsal(tmp_path, 5)
    out = latency_step(
        tmp_path,
        queries,
        texts,
        "vector-71k",
        stream=io.StringIO(),
        log=lambda m: None,
        load=lambda m: ordered_fake(),
        models=(REHEARSAL_MODEL,),
    )
    assert len(out["fp32_ns"][20]) == 5
