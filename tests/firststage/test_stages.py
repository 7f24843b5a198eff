"""Stages end to end against the real Typesense 0.24.1 on real German passages (bundled sample subset)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.inputs.trec import read_run
from bench.core.errors import BenchError
from bench.data import Passage
from bench.firststage.collection import ensure_collection
from bench.firststage.features import ServerRefused, StageRefused
from bench.firststage.server import TypesenseServer
from bench.firststage.stages import run_stage
from tests.support.typesense import drop_collections

from .conftest import HashEmbedder

pytestmark = pytest.mark.typesense
Small = tuple[dict[str, str], list[Passage], Path]


@pytest.fixture(autouse=True)
def _empty_server(server: TypesenseServer) -> None:
    drop_collections(server)


def test_keyword_plain_end_to_end(server: TypesenseServer, small: Small, tmp_path: Path) -> None:
    queries, passages, qrels = small
    out_run, out_json = tmp_path / "runs" / "plain.trec", tmp_path / "results" / "plain.json"
    res = run_stage(
        "keyword-plain-71k",
        server=server,
        corpus=passages,
        queries=queries,
        mode="rehearsal",
        out_run=out_run,
        out_json=out_json,
        qrels_path=qrels,
        checkpoint=tmp_path / "ck.json",
        warmup=2,
    )
    rec = json.loads(out_json.read_text(encoding="utf-8"))
    assert rec["server_version"] == "0.24.1" and rec["import"]["documents"] == len(passages)
    assert rec["search_params"]["sort_by"] == "_text_match:desc,_seq_id:asc"
    assert "numerically" in rec["import_order"]
    assert rec["stopwords"]["applied"] is False and rec["stopwords"]["size"] == 271
    assert 0.0 < rec["metrics"]["recall@100"] <= rec["metrics"]["ceiling"] + 1.0
    assert rec["latency"]["queries"] == 30 and rec["latency"]["server_search_time_ms"]["p95"] is not None
    assert len(rec["latency"]["per_query_client_ms"]) == 30
    assert rec["run_file"]["sha256"]
    run = read_run(out_run)
    assert set(run) <= set(queries) and all(len(v) <= 100 for v in run.values())
    assert run == {q: [(d, float(s)) for d, s in v] for q, v in res.run.items() if v}
    assert all(
        line.split()[5] == "first-stage/keyword-plain-71k" for line in out_run.read_text().splitlines()
    )


def test_refusals_leave_no_files(server: TypesenseServer, small: Small, tmp_path: Path) -> None:
    queries, passages, _ = small
    out_run, out_json = tmp_path / "r.trec", tmp_path / "r.json"
    # keyword-71k runs in a rehearsal as a declared substitute (tests/firststage/test_keyword_substitute.py)
    for stage in ("keyword-full", "hybrid-71k"):
        with pytest.raises(StageRefused) as info:
            run_stage(
                stage,
                server=server,
                corpus=passages,
                queries=queries,
                embedder=HashEmbedder(),
                mode="rehearsal",
                out_run=out_run,
                out_json=out_json,
            )
        assert info.value.first_version == "26.0" and info.value.feature == "stem"
    with pytest.raises(ServerRefused):
        run_stage(
            "keyword-plain-71k",
            server=server,
            corpus=passages,
            queries=queries,
            mode="measurement",
            out_run=out_run,
            out_json=out_json,
        )
    assert not out_run.exists() and not out_json.exists()


def test_keyword_ties_follow_import_order(server: TypesenseServer, tmp_path: Path) -> None:
    docs = [
        Passage(f"{a}#{p}", "Gleich", "Ein identischer Satz über Häuser.")
        for a in (7, 30, 200)
        for p in (0, 2, 10)
    ]
    res = run_stage(
        "keyword-plain-71k",
        server=server,
        corpus=docs,
        queries={"q1": "identischer Satz"},
        mode="rehearsal",
        out_run=tmp_path / "t.trec",
        out_json=tmp_path / "t.json",
        checkpoint=tmp_path / "ck.json",
        warmup=0,
    )
    ranked = res.run["q1"]
    assert len({s for _, s in ranked}) == 1  # all tied
    assert [d for d, _ in ranked] == [p.docid for p in docs]  # insertion (= ascending id) order


def test_vector_ties_follow_import_order(server: TypesenseServer, tmp_path: Path) -> None:
    class Const(HashEmbedder):
        def encode(self, texts):  # type: ignore[no-untyped-def]
            import numpy as np

            return np.tile(np.eye(1, self.dims, dtype=np.float32), (len(texts), 1))

    docs = [Passage(f"{a}#0", "", f"Text {a}") for a in (1, 5, 9, 12, 100)]
    res = run_stage(
        "vector-71k",
        server=server,
        corpus=docs,
        queries={"q": "x"},
        embedder=Const(model="c"),
        mode="rehearsal",
        out_run=tmp_path / "v.trec",
        out_json=tmp_path / "v.json",
        checkpoint=tmp_path / "ck.json",
        warmup=0,
    )
    assert [d for d, _ in res.run["q"]] == [p.docid for p in docs]


def test_vector_stage_hash_embedder(server: TypesenseServer, small: Small, tmp_path: Path) -> None:
    queries, passages, qrels = small
    emb = HashEmbedder(dims=24)
    res = run_stage(
        "vector-71k",
        server=server,
        corpus=passages,
        queries=queries,
        embedder=emb,
        mode="rehearsal",
        out_run=tmp_path / "v.trec",
        out_json=tmp_path / "v.json",
        qrels_path=qrels,
        checkpoint=tmp_path / "ck.json",
        warmup=0,
    )
    ef = res.record["ef"]
    assert ef["ef_sent"] is False and ef["ef"] is None and ef["overlap"] >= 0.99
    assert res.record["vector_query_options"] == {"k": 100}
    assert res.record["embeddings"]["query_prompt"] == "query: "
    assert all(c.startswith("query: ") for c in emb.calls[len(passages) :])


def test_schema_mismatch(server: TypesenseServer, small: Small, tmp_path: Path) -> None:
    queries, passages, _ = small
    server.request("DELETE", "/collections/miracl-de-71k-plain", ok=(200, 404))
    ensure_collection(
        server, {"name": "miracl-de-71k-plain", "fields": [{"name": "title", "type": "string"}]}
    )
    with pytest.raises(BenchError, match="different schema"):
        run_stage(
            "keyword-plain-71k",
            server=server,
            corpus=passages,
            queries=queries,
            mode="rehearsal",
            out_run=tmp_path / "r.trec",
            out_json=tmp_path / "r.json",
            checkpoint=tmp_path / "c.json",
        )
    server.request("DELETE", "/collections/miracl-de-71k-plain")


def test_wrong_dimension(server: TypesenseServer, tmp_path: Path) -> None:
    class Wrong(HashEmbedder):
        def encode(self, texts):  # type: ignore[no-untyped-def]
            return super().encode(texts)[:, :-1]

    with pytest.raises(BenchError, match="expected"):
        run_stage(
            "vector-71k",
            server=server,
            corpus=[Passage("1#0", "", "a")],
            queries={"q": "x"},
            embedder=Wrong(model="wrong"),
            mode="rehearsal",
            out_run=tmp_path / "r.trec",
            out_json=tmp_path / "r.json",
        )
    assert not (tmp_path / "r.trec").exists()


def test_unsorted_corpus_refused(server: TypesenseServer, tmp_path: Path) -> None:
    docs = [Passage("10#0", "", "a"), Passage("9#0", "", "b")]
    server.request("DELETE", "/collections/miracl-de-71k-plain", ok=(200, 404))
    with pytest.raises(BenchError, match="ascending"):
        run_stage(
            "keyword-plain-71k",
            server=server,
            corpus=docs,
            queries={"q": "a"},
            mode="rehearsal",
            out_run=tmp_path / "r.trec",
            out_json=tmp_path / "r.json",
            checkpoint=tmp_path / "c.json",
        )
