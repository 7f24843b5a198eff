"""vector-71k end to end with a real embedding model (the MiniLM stand-in) on real German passages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.inputs.trec import read_qrels
from analysis.stats.metrics import evaluate
from bench.data import Passage
from bench.firststage.embed import CachedEmbeddings
from bench.firststage.server import TypesenseServer
from bench.firststage.stages import run_stage

pytestmark = [pytest.mark.typesense, pytest.mark.model]


def test_vector_stage_minilm(
    server: TypesenseServer,
    tiny: tuple[dict[str, str], list[Passage], Path],
    minilm_cache: CachedEmbeddings,
    tmp_path: Path,
) -> None:
    queries, passages, qrels = tiny
    server.request("DELETE", "/collections/miracl-de-71k-vector", ok=(200, 404))
    res = run_stage(
        "vector-71k",
        server=server,
        corpus=passages,
        queries=queries,
        embedder=minilm_cache,
        mode="rehearsal",
        out_run=tmp_path / "vector-71k.trec",
        out_json=tmp_path / "vector-71k.json",
        qrels_path=qrels,
        checkpoint=tmp_path / "ck.json",
        warmup=2,
    )
    rec = json.loads((tmp_path / "vector-71k.json").read_text(encoding="utf-8"))
    assert rec["embeddings"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert rec["embeddings"]["query_prompt"] == "query: " and rec["embeddings"]["dims"] == 384
    assert rec["ef"]["ef_sent"] is False and rec["ef"]["overlap"] >= 0.99
    # rehearsal on a server without ef: the always-1 field that would allow exact search is in the schema,
    # but the server default met the rule, so no substitution happened
    assert rec["schema"]["fields"] == [
        {"name": "embedding", "type": "float[]", "num_dim": 384},
        {"name": "rehearsal_all", "type": "int32"},
    ]
    assert rec["ef"]["substitute"] is None and "filter_by" not in rec["search_params"]
    per_query = evaluate(read_qrels(qrels), res.run, measures=["recall@100"])["recall@100"]
    assert all(per_query[q] == 1.0 for q in queries)  # all judged passages of these queries are in the corpus
    assert rec["metrics"]["recall@100"] == pytest.approx(len(queries) / 305)  # other qrels queries: 0
    for ranked in res.run.values():
        scores = [s for _, s in ranked]
        assert scores == sorted(scores, reverse=True) and all(-1.0001 <= s <= 1.0001 for s in scores)
