"""Rehearsal inputs: the bundled sample, BEIR layout, the query subset and the qrels written for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.inputs.trec import read_qrels
from bench.core.errors import BenchError
from bench.rehearse.inputs import load_beir, load_inputs
from tests.support.rehearsal import N_QUERIES, write_mini_beir


def test_bundled_sample_with_subset(tmp_path: Path) -> None:
    full = load_inputs(None, None)
    assert len(full.queries) == 305 and sum(len(j) for j in full.qrels.values()) == 3144
    assert len(full.corpus) == full.notes["judged_passages"] + full.notes["nomiracl_passages"]
    sub = load_inputs(None, 20)
    assert list(sub.queries) == sorted(full.queries)[:20]
    qrels = read_qrels(sub.write_qrels(tmp_path / "qrels.tsv"))
    assert set(qrels) == set(sub.queries)
    assert qrels == {q: full.qrels[q] for q in sub.queries}


def test_beir_layout(tmp_path: Path) -> None:
    inputs = load_beir(write_mini_beir(tmp_path / "ds"))
    assert len(inputs.queries) == N_QUERIES
    assert all(p.title or p.text for p in inputs.corpus)
    ids = [p.docid for p in inputs.corpus]
    assert ids == sorted(ids, key=lambda d: tuple(map(int, d.split("#"))))


def test_beir_numeric_ids_get_the_recorded_order(tmp_path: Path) -> None:
    """SciFact-style numeric ids import in numeric order (bench.data.IMPORT_ORDER), not as text."""
    ds = tmp_path / "num"
    (ds / "qrels").mkdir(parents=True)
    docs = {"31715818": "a", "4983": "b", "10": "c", "x7": "d"}
    (ds / "corpus.jsonl").write_text(
        "".join(f'{{"_id": "{d}", "title": "", "text": "{t}"}}\n' for d, t in docs.items()), encoding="utf-8"
    )
    (ds / "queries.jsonl").write_text('{"_id": "1", "text": "q"}\n', encoding="utf-8")
    (ds / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\t4983\t1\n", encoding="utf-8")
    assert [p.docid for p in load_beir(ds).corpus] == ["10", "4983", "31715818", "x7"]


def test_beir_malformed_line_named(tmp_path: Path) -> None:
    ds = write_mini_beir(tmp_path / "ds")
    with (ds / "corpus.jsonl").open("a") as fh:
        fh.write("{broken\n")
    with pytest.raises(BenchError, match=r"corpus\.jsonl:\d+: not a JSON object"):
        load_beir(ds)


def test_beir_qrels_query_without_text(tmp_path: Path) -> None:
    ds = write_mini_beir(tmp_path / "ds")
    with (ds / "qrels" / "test.tsv").open("a") as fh:
        fh.write("999#0\t1#0\t1\n")
    with pytest.raises(BenchError, match=r"'999#0' is not in queries\.jsonl"):
        load_beir(ds)


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        (f"1#0\t2#0\t{2**62}\n", f"relevance label 0..65535, found {2**62}"),  # crashed pytrec_eval later
        ("1#0\t2#0\t-1\n", "relevance label 0..65535, found -1"),
        ("1#0\t2#0\n", "3 columns `query-id corpus-id score`"),
    ],
)
def test_beir_qrels_go_through_the_one_qrels_reader(tmp_path: Path, line: str, needle: str) -> None:
    """`bench rehearse --dataset` read BEIR qrels with its own parser, which took any
    integer; now analysis.inputs.trec.read_qrels decides, with the file, the line and the fix."""
    ds = write_mini_beir(tmp_path / "ds")
    qrels = ds / "qrels" / "test.tsv"
    n = len(qrels.read_text(encoding="utf-8").splitlines()) + 1
    with qrels.open("a") as fh:
        fh.write(line)
    with pytest.raises(BenchError, match=rf"test\.tsv:{n} \(TREC qrels file\): expected .*Fix:") as exc:
        load_beir(ds)
    assert needle in str(exc.value)
