"""Hub-layout loaders on small files built in the hub layouts (the hub itself is unreachable here)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.core.errors import BenchError
from bench.data.hub import (
    CORPUS_71K_FILE,
    CORPUS_FULL_DIR,
    CORPUS_FULL_SHARDS,
    corpus_71k_id_column,
    corpus_full_shards,
    iter_corpus_full,
    read_corpus_71k,
)
from bench.data.miracl import (
    TEST_B_QUERIES,
    TEST_B_SPLIT,
    hub_test_b_topics,
    hub_topics_and_qrels,
    qrels_relpath,
    topics_relpath,
)


def _parquet(path: Path, columns: dict[str, list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)


def test_71k_sorted_into_import_order(tmp_path: Path) -> None:
    _parquet(
        tmp_path / CORPUS_71K_FILE,
        {"_id": ["10#1", "9#3", "10#0"], "title": ["B", "A", "B"], "text": ["zwei", "eins", "null"]},
    )
    got = read_corpus_71k(tmp_path)
    assert [p.docid for p in got] == ["9#3", "10#0", "10#1"]
    assert got[0].passage_text == "A\neins"


@pytest.mark.parametrize("id_column", ["_id", "id"])  # older mteb uploads use _id, later ones id
def test_71k_accepts_either_id_column_and_names_it(tmp_path: Path, id_column: str) -> None:
    _parquet(
        tmp_path / CORPUS_71K_FILE, {id_column: ["10#0", "9#3"], "title": ["B", "A"], "text": ["n", "e"]}
    )
    assert corpus_71k_id_column(tmp_path) == id_column
    assert [(p.docid, p.passage_text) for p in read_corpus_71k(tmp_path)] == [
        ("9#3", "A\ne"),
        ("10#0", "B\nn"),
    ]


def test_71k_wrong_layout(tmp_path: Path) -> None:
    _parquet(tmp_path / CORPUS_71K_FILE, {"id": ["1#0"], "text": ["x"]})
    with pytest.raises(BenchError, match=r"lack \['title'\]; expected exactly one of _id or id"):
        read_corpus_71k(tmp_path)
    _parquet(tmp_path / CORPUS_71K_FILE, {"docid": ["1#0"], "title": ["T"], "text": ["x"]})
    with pytest.raises(BenchError, match="have 0 id columns"):
        read_corpus_71k(tmp_path)
    _parquet(tmp_path / CORPUS_71K_FILE, {"_id": ["1#0"], "id": ["1#0"], "title": ["T"], "text": ["x"]})
    with pytest.raises(BenchError, match="have 2 id columns"):
        corpus_71k_id_column(tmp_path)
    with pytest.raises(BenchError, match="missing"):
        read_corpus_71k(tmp_path / "nothing")


def _shard(folder: Path, n: int, rows: list[object]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"docs-{n}.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for r in rows:
            fh.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")
    return path


def test_full_corpus_streams_shards_in_numeric_order(tmp_path: Path) -> None:
    folder = tmp_path / CORPUS_FULL_DIR
    for n in range(CORPUS_FULL_SHARDS):
        _shard(folder, n, [{"docid": f"{n}#{i}", "title": f"T{n}", "text": "Größe"} for i in range(3)])
    assert [p.name for p in corpus_full_shards(tmp_path)][:3] == [
        "docs-0.jsonl.gz",
        "docs-1.jsonl.gz",
        "docs-2.jsonl.gz",
    ]
    ids = [p.docid for p in iter_corpus_full(tmp_path)]
    assert len(ids) == 96 and ids[:4] == ["0#0", "0#1", "0#2", "1#0"] and ids[-1] == "31#2"


def test_full_corpus_malformed_line(tmp_path: Path) -> None:
    folder = tmp_path / CORPUS_FULL_DIR
    for n in range(1, CORPUS_FULL_SHARDS):
        _shard(folder, n, [])
    path = _shard(folder, 0, [{"docid": "1#0", "title": "", "text": "a"}, '{"docid": "1#1", "title"'])
    with pytest.raises(BenchError, match=rf"{path}:2: not valid JSON"):
        list(iter_corpus_full(tmp_path))
    _shard(folder, 0, [{"docid": "1#0", "text": "a"}])
    with pytest.raises(BenchError, match=":1: expected an object"):
        list(iter_corpus_full(tmp_path))


def test_full_corpus_missing_shard(tmp_path: Path) -> None:
    folder = tmp_path / CORPUS_FULL_DIR
    _shard(folder, 0, [])
    _shard(folder, 2, [])
    with pytest.raises(BenchError, match="missing"):
        corpus_full_shards(tmp_path)


def test_full_corpus_needs_exactly_32_shards(tmp_path: Path) -> None:
    folder = tmp_path / CORPUS_FULL_DIR
    for n in range(31):  # consecutive, but one short: the last shard never arrived
        _shard(folder, n, [])
    with pytest.raises(BenchError, match=r"31 shards; the German corpus has exactly 32 .* missing: docs-31;"):
        corpus_full_shards(tmp_path)
    _shard(folder, 31, [])
    assert len(corpus_full_shards(tmp_path)) == 32
    _shard(folder, 32, [])
    with pytest.raises(BenchError, match="missing: none; unexpected: docs-32"):
        corpus_full_shards(tmp_path)


def test_topics_and_qrels_hub_layout(tmp_path: Path) -> None:
    topics, qrels = tmp_path / topics_relpath(), tmp_path / qrels_relpath()
    topics.parent.mkdir(parents=True)
    qrels.parent.mkdir(parents=True)
    topics.write_text("1#0\tWo ist das?\n2#0\tWer war das?\n", encoding="utf-8")
    qrels.write_text("1#0\tQ0\t5#1\t1\n", encoding="utf-8")
    queries, path = hub_topics_and_qrels(tmp_path)
    assert queries == {"1#0": "Wo ist das?", "2#0": "Wer war das?"} and path == qrels
    topics.write_bytes("\ufeff1#0\tWo ist das?\r\n2#0\tWer war das?\r\n".encode())  # BOM and CRLF
    assert hub_topics_and_qrels(tmp_path)[0] == queries
    topics.write_text("1#0\tWo\n1#0\tnochmal\n", encoding="utf-8")
    with pytest.raises(BenchError, match=":2: query id"):
        hub_topics_and_qrels(tmp_path)


def _test_b(snapshot: Path, qids: list[str]) -> Path:
    path = snapshot / topics_relpath("de", TEST_B_SPLIT)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{q}\tFrage {q}?\n" for q in qids), encoding="utf-8")
    return path


def test_test_b_topics_without_qrels(tmp_path: Path) -> None:
    dev = ["1#0", "2#0"]
    qids = [str(10_000 + i) for i in range(TEST_B_QUERIES)]
    path = _test_b(tmp_path, qids)
    assert not (tmp_path / qrels_relpath("de", TEST_B_SPLIT)).exists()  # test-B has topics only
    topics = hub_test_b_topics(tmp_path, dev)
    assert len(topics) == 712 and topics["10000"] == "Frage 10000?"
    with pytest.raises(BenchError, match="qrels file missing"):
        hub_topics_and_qrels(tmp_path, split=TEST_B_SPLIT)  # the dev reader would refuse it
    _test_b(tmp_path, qids[:-1])
    with pytest.raises(BenchError, match=rf"{path}: 711 queries, MIRACL de test-B has 712"):
        hub_test_b_topics(tmp_path, dev)
    _test_b(tmp_path, [*qids[:-1], "2#0"])
    with pytest.raises(BenchError, match=r"1 test-B query id\(s\) are also dev queries \(first: '2#0'\)"):
        hub_test_b_topics(tmp_path, dev)
    path.unlink()
    with pytest.raises(BenchError, match="test-B topics missing"):
        hub_test_b_topics(tmp_path, dev)
