"""Check-1 input: MIRACLReranking parquet files and the mmteb id map, built in the assumed hub layouts."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.core.errors import BenchError
from bench.data import Passage
from bench.data.id_map import read_id_map
from bench.equality.data import (
    RerankingRows,
    build_equality_set,
    build_equality_set_from_corpus,
    candidate_position,
    load_reranking,
)
from bench.equality.runner import load_equality_set, resolve_id_map_method

N_Q, N_C = 22, 100


def write_reranking(
    snap: Path, *, n_q: int = N_Q, n_c: int = N_C, titles: bool = True, title_in_text: bool = False
) -> dict[str, object]:
    """mteb retrieval layout; candidates get mteb's ids ``candidate_<qid>_<5-digit BM25 position>``.

    ``title_in_text``: the corpus text already reads "Title Text" (as the evidence shows for the pin)."""
    truth: dict[str, object] = {}
    queries, corpus, top, qrels = [], [], [], []
    for i in range(n_q):
        qid = f"dev_query{i}"
        queries.append({"_id": qid, "text": f"Wie heißt Frage {i}?"})
        ids = []
        for j in range(n_c):
            did = f"candidate_{qid}_{j:05d}"
            ids.append(did)
            title = f"Titel {i}-{j}" if titles else ""
            text = f"{title} Text {i} {j}." if title_in_text else f"Text {i} {j}."
            corpus.append({"_id": did, "title": title, "text": text})
            qrels.append({"query-id": qid, "corpus-id": did, "score": int(j == 0)})
        top.append({"query-id": qid, "corpus-ids": ids})
        truth[qid] = (str(5000 + i), [f"{70000 + i}#{j}" for j in range(n_c)])
    for part, rows in (("queries", queries), ("corpus", corpus), ("top_ranked", top), ("qrels", qrels)):
        (snap / f"de-{part}").mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), snap / f"de-{part}" / "dev-00000-of-00001.parquet")
    return truth


def write_id_map_jsonl(path: Path, n_q: int = N_Q, n_c: int = N_C, *, shuffle: bool = False) -> None:
    """de.gz as JSON lines, candidates in BM25 order (``shuffle``: in another order, which must fail)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for i in range(n_q):
            cands = [
                {"docid": f"{70000 + i}#{j}", "title": f"Titel {i}-{j}", "text": f"Text {i} {j}."}
                for j in range(n_c)
            ]
            if shuffle:
                rng.shuffle(cands)
            fh.write(
                json.dumps({"query_id": str(5000 + i), "query": f"Wie heißt Frage {i}?", "candidates": cands})
                + "\n"
            )


@pytest.mark.parametrize("title_in_text", [False, True])
def test_load_and_map_by_position_with_text_check(tmp_path: Path, title_in_text: bool) -> None:
    snap = tmp_path / "rr"
    truth = write_reranking(snap, title_in_text=title_in_text)
    id_map = tmp_path / "map" / "data" / "bm25" / "de.gz"
    write_id_map_jsonl(id_map)
    data = load_equality_set(snap, id_map, tmp_path / "no-topics.tsv")
    assert len(data.queries) == 20
    first = data.queries[0]
    assert first.source_qid == "dev_query0" and first.qid == "5000"
    # the text as provided: never a second title in front of a text that already starts with it
    assert first.passages[0] == ("Titel 0-0 Text 0 0." if title_in_text else "Titel 0-0\nText 0 0.")
    for q in data.queries:
        qid, docids = truth[q.source_qid]  # type: ignore[misc]
        assert q.qid == qid and list(q.docids) == docids and len(q.passages) == 100
    prov = data.provenance
    assert prov["id_map_method"] == "de.gz"
    assert prov["id_map_matching"] == {
        "query_by_id": 0,
        "query_by_text": 20,
        "docs_by_position_text_checked": 2000,
        "docs_by_position": 0,
        "docs_by_text": 0,
        "docs_by_list_order": 0,
    }
    rule = {
        "no_title": 0,
        "title_in_text": 2000 if title_in_text else 0,
        "title_joined": 0 if title_in_text else 2000,
    }
    assert prov["text_rule"] == rule
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
    assert data.provenance["text_rule"] == {"no_title": 12, "title_in_text": 0, "title_joined": 0}
    assert data.queries[1].docids == (
        "70001#0",
        "70001#1",
        "70001#2",
        "70001#3",
    )  # rank order, not file order
    assert data.queries[1].passages[0] == "Text 1 0."
    assert data.provenance["id_map_matching"]["docs_by_position"] == 12


def test_errors_name_file_and_fix(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="bench-cpu data fetch reranking"):
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
    assert data.provenance["id_map_matching"]["docs_by_position_text_checked"] == 6


def test_position_suffix() -> None:
    assert candidate_position("candidate_dev_query521_00010") == 10
    assert candidate_position("candidate_dev_query521_00000") == 0
    assert candidate_position("1234#5") is None and candidate_position("candidate_x") is None


def test_position_and_text_disagree_is_an_error(tmp_path: Path) -> None:
    snap = tmp_path / "rr"
    write_reranking(snap, n_q=2, n_c=5)
    id_map = tmp_path / "de.gz"
    write_id_map_jsonl(id_map, n_q=2, n_c=5, shuffle=True)  # de.gz in another order than BM25's
    rows = load_reranking(snap, n_queries=2, n_candidates=5)
    with pytest.raises(
        BenchError, match=r"query 5000, position 0 \('candidate_dev_query0_00000'\): the id map's"
    ):
        build_equality_set(rows, read_id_map(id_map), {}, id_map_path=id_map)


def test_equal_texts_map_by_position_to_two_passages(tmp_path: Path) -> None:
    snap = tmp_path / "rr"
    write_reranking(snap, n_q=1, n_c=5, titles=False)
    corpus = pq.read_table(snap / "de-corpus" / "dev-00000-of-00001.parquet").to_pylist()
    for row in corpus[3:5]:
        row["text"] = "Derselbe Text."  # candidates 3 and 4 of query 0 read the same
    pq.write_table(pa.Table.from_pylist(corpus), snap / "de-corpus" / "dev-00000-of-00001.parquet")
    id_map = tmp_path / "de.gz"
    cands = [
        {"docid": f"70000#{j}", "text": "Derselbe Text." if j >= 3 else f"Text 0 {j}."} for j in range(5)
    ]
    with gzip.open(id_map, "wt") as fh:
        fh.write(json.dumps({"query_id": "5000", "query": "Wie heißt Frage 0?", "candidates": cands}) + "\n")
    rows = load_reranking(snap, n_queries=1, n_candidates=5)
    data = build_equality_set(rows, read_id_map(id_map), {}, id_map_path=id_map)
    assert data.queries[0].docids == ("70000#0", "70000#1", "70000#2", "70000#3", "70000#4")
    assert data.provenance["id_map_matching"]["docs_by_position_text_checked"] == 5


def _rows(docids: list[str], texts: list[str]) -> RerankingRows:
    return RerankingRows([("dev_query0", "Wie heißt Frage 0?", docids, texts)], {})


def test_ids_without_position_match_by_text_and_refuse_ambiguity(tmp_path: Path) -> None:
    id_map = tmp_path / "de.gz"
    cands = [{"docid": f"70000#{j}", "text": t} for j, t in enumerate(["a b", "c", "a  b"])]
    with gzip.open(id_map, "wt") as fh:
        fh.write(json.dumps({"query_id": "5000", "query": "Wie heißt Frage 0?", "candidates": cands}) + "\n")
    entries = read_id_map(id_map)
    with pytest.raises(BenchError, match=r"query 5000: positions 0 and 1 both map to passage '70000#1'"):
        build_equality_set(_rows(["x", "y"], ["c", "c"]), entries, {}, id_map_path=id_map)
    with pytest.raises(BenchError, match=r"query 5000, position 1 \('y'\): its text matches 2 passages"):
        build_equality_set(_rows(["x", "y"], ["c", "a b"]), entries, {}, id_map_path=id_map)
    with pytest.raises(BenchError, match=r"query 5000, position 0 \('x'\): its text matches no passage"):
        build_equality_set(_rows(["x"], ["d"]), entries, {}, id_map_path=id_map)
    ok = build_equality_set(_rows(["x"], ["c"]), entries, {}, id_map_path=id_map)
    assert ok.queries[0].docids == ("70000#1",) and ok.provenance["id_map_matching"]["docs_by_text"] == 1
    with pytest.raises(
        BenchError, match=r"query 5000, position 7 \('candidate_dev_query0_00007'\): the id map lists"
    ):
        build_equality_set(_rows(["candidate_dev_query0_00007"], ["c"]), entries, {}, id_map_path=id_map)


def test_corpus_fallback_needs_no_de_gz(tmp_path: Path) -> None:
    topics = {"5000": "Wie heißt Frage 0?"}
    corpus = [
        Passage("70000#0", "Titel", "Eins."),
        Passage("70000#1", "Titel", "Zwei."),
        Passage("70001#0", "Titel", "Drei."),
        Passage("70002#0", "Titel", "Drei."),  # the same title and text twice in the corpus
        Passage("70003#0", "Anders", "Eins."),
    ]
    rows = _rows(
        ["candidate_dev_query0_00000", "candidate_dev_query0_00001"], ["Titel Eins.", "Titel\nZwei."]
    )
    data = build_equality_set_from_corpus(rows, iter(corpus), topics, corpus_label="corpus")
    assert data.queries[0].qid == "5000" and data.queries[0].docids == ("70000#0", "70000#1")
    assert data.provenance["id_map_method"] == "corpus"
    assert data.provenance["id_map_matching"] == {"candidates": 2, "matched_uniquely": 2}
    ambiguous = _rows(
        ["candidate_dev_query0_00000", "candidate_dev_query0_00001"], ["Titel Eins.", "Titel Drei."]
    )
    with pytest.raises(
        BenchError, match=r"query 5000, position 1 .*several passages \(70001#0, 70002#0\).*1 of 2"
    ):
        build_equality_set_from_corpus(ambiguous, iter(corpus), topics, corpus_label="corpus")
    with pytest.raises(BenchError, match="matches no MIRACL de dev topic"):
        build_equality_set_from_corpus(rows, iter(corpus), {"1": "andere"}, corpus_label="corpus")


def test_load_equality_set_through_the_full_corpus(tmp_path: Path) -> None:
    snap = tmp_path / "rr"
    truth = write_reranking(snap, title_in_text=True)
    shards = tmp_path / "full" / "miracl-corpus-v1.0-de"
    shards.mkdir(parents=True)
    for n in range(32):  # the German corpus: exactly 32 shards; passages of query i in shard i
        with gzip.open(shards / f"docs-{n}.jsonl.gz", "wt", encoding="utf-8") as fh:
            for j in range(N_C if n < N_Q else 0):
                row = {"docid": f"{70000 + n}#{j}", "title": f"Titel {n}-{j}", "text": f"Text {n} {j}."}
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    topics = tmp_path / "topics.tsv"
    topics.write_text("".join(f"{5000 + i}\tWie heißt Frage {i}?\n" for i in range(N_Q)), encoding="utf-8")
    no_map = tmp_path / "no" / "de.gz"
    assert resolve_id_map_method("auto", no_map) == "corpus"
    data = load_equality_set(snap, no_map, topics, id_map_method="corpus", corpus_snapshot=tmp_path / "full")
    for q in data.queries:
        qid, docids = truth[q.source_qid]  # type: ignore[misc]
        assert q.qid == qid and list(q.docids) == docids
    assert data.provenance["id_map_matching"] == {"candidates": 2000, "matched_uniquely": 2000}
    assert data.provenance["id_map_method"] == "corpus" and len(data.provenance["files_sha256"]) == 3
    write_id_map_jsonl(no_map)
    assert resolve_id_map_method("auto", no_map) == "de.gz"
    assert resolve_id_map_method("corpus", no_map) == "corpus"
