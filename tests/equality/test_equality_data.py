"""Check-1 input: MIRACLReranking parquet files and the mmteb id map, built in the assumed hub layouts."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.equality.data import build_equality_set, load_reranking, read_id_map
from bench.equality.runner import load_equality_set
from bench.errors import BenchError

N_Q, N_C = 22, 100


def write_reranking(snap: Path, *, n_q: int = N_Q, n_c: int = N_C, titles: bool = True) -> dict[str, object]:
    """mteb retrieval layout; candidates get synthetic ids as in mteb's conversion of the old format."""
    truth: dict[str, object] = {}
    queries, corpus, top, qrels = [], [], [], []
    for i in range(n_q):
        qid = f"dev_query{i}"
        queries.append({"_id": qid, "text": f"Wie heißt Frage {i}?"})
        ids = []
        for j in range(n_c):
            did = f"candidate_{qid}_{j:05d}"
            ids.append(did)
            corpus.append({"_id": did, "title": f"Titel {i}-{j}" if titles else "", "text": f"Text {i} {j}."})
            qrels.append({"query-id": qid, "corpus-id": did, "score": int(j == 0)})
        top.append({"query-id": qid, "corpus-ids": ids})
        truth[qid] = (str(5000 + i), [f"{70000 + i}#{j}" for j in range(n_c)])
    for part, rows in (("queries", queries), ("corpus", corpus), ("top_ranked", top), ("qrels", qrels)):
        (snap / f"de-{part}").mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), snap / f"de-{part}" / "dev-00000-of-00001.parquet")
    return truth


def write_id_map_jsonl(path: Path, n_q: int = N_Q, n_c: int = N_C) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for i in range(n_q):
            cands = [
                {"docid": f"{70000 + i}#{j}", "title": f"Titel {i}-{j}", "text": f"Text {i} {j}."}
                for j in range(n_c)
            ]
            rng.shuffle(cands)  # matched by text, not position
            fh.write(
                json.dumps({"query_id": str(5000 + i), "query": f"Wie heißt Frage {i}?", "candidates": cands})
                + "\n"
            )


def test_load_and_map_by_text(tmp_path: Path) -> None:
    snap = tmp_path / "rr"
    truth = write_reranking(snap)
    id_map = tmp_path / "map" / "data" / "bm25" / "de.gz"
    write_id_map_jsonl(id_map)
    data = load_equality_set(snap, id_map, tmp_path / "no-topics.tsv")
    assert len(data.queries) == 20
    first = data.queries[0]
    assert first.source_qid == "dev_query0" and first.qid == "5000"
    assert first.passages[0] == "Titel 0-0\nText 0 0."  # the plan's title + "\n" + text
    for q in data.queries:
        qid, docids = truth[q.source_qid]  # type: ignore[misc]
        assert q.qid == qid and list(q.docids) == docids and len(q.passages) == 100
    prov = data.provenance
    assert prov["id_map_matching"] == {
        "query_by_id": 0,
        "query_by_text": 20,
        "docs_by_text": 2000,
        "docs_by_position": 0,
    }
    assert len(prov["files_sha256"]) == 4 and all(len(v) == 64 for v in prov["files_sha256"].values())
    assert prov["queries"][:2] == ["5000", "5001"]


def test_trec_id_map_with_topics(tmp_path: Path) -> None:
    snap = tmp_path / "rr"
    write_reranking(snap, n_q=3, n_c=4, titles=False)
    id_map = tmp_path / "de.gz"
    lines = [
        f"{5000 + i} Q0 {70000 + i}#{j} {j + 1} {10 - j}.5 bm25" for i in range(3) for j in reversed(range(4))
    ]
    with gzip.open(id_map, "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    topics = {str(5000 + i): f"Wie heißt Frage {i}?" for i in range(3)}
    rows = load_reranking(snap, n_queries=3, n_candidates=4)
    data = build_equality_set(rows, read_id_map(id_map), topics, id_map_path=id_map)
    assert [q.qid for q in data.queries] == ["5000", "5001", "5002"]
    assert data.queries[1].docids == (
        "70001#0",
        "70001#1",
        "70001#2",
        "70001#3",
    )  # rank order, not file order
    assert data.queries[1].passages[0] == "Text 1 0."
    assert data.provenance["id_map_matching"]["docs_by_position"] == 12


def test_errors_name_file_and_fix(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="bench data fetch reranking"):
        load_reranking(tmp_path / "missing")
    snap = tmp_path / "rr"
    write_reranking(snap, n_q=3, n_c=5)
    with pytest.raises(BenchError, match="the check needs the first 20"):
        load_reranking(snap)
    with pytest.raises(BenchError, match="has 5 candidates"):
        load_reranking(snap, n_queries=3)
    bad = tmp_path / "bad.gz"
    with gzip.open(bad, "wt") as fh:
        fh.write("not a run line\n")
    with pytest.raises(BenchError, match=r"bad.gz:1"):
        read_id_map(bad)
    other = tmp_path / "other.gz"
    with gzip.open(other, "wt") as fh:
        fh.write(json.dumps({"query_id": "9", "query": "andere Frage", "candidates": ["1#0"]}) + "\n")
    rows = load_reranking(snap, n_queries=3, n_candidates=5)
    with pytest.raises(BenchError, match="matches no query id or text"):
        build_equality_set(rows, read_id_map(other), {}, id_map_path=other)


def test_id_map_as_json_array_and_text_without_title(tmp_path: Path) -> None:
    snap = tmp_path / "rr"
    write_reranking(snap, n_q=2, n_c=3, titles=False)  # MIRACLReranking carries the text only
    id_map = tmp_path / "de.gz"
    objs = [
        {
            "qid": str(5000 + i),
            "query": f"Wie heißt Frage {i}?",
            "candidates": [
                {"docid": f"{70000 + i}#{j}", "title": "T", "text": f"Text {i} {j}."} for j in range(3)
            ],
        }
        for i in range(2)
    ]
    with gzip.open(id_map, "wt") as fh:
        json.dump(objs, fh, indent=1)
    rows = load_reranking(snap, n_queries=2, n_candidates=3)
    data = build_equality_set(rows, read_id_map(id_map), {}, id_map_path=id_map)
    assert data.queries[1].docids == ("70001#0", "70001#1", "70001#2")
    assert data.provenance["id_map_matching"]["docs_by_text"] == 6
