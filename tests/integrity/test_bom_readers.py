"""A UTF-8 byte-order mark in a topics file, a BEIR file or datasets.lock never changes what is read
silently: readers strip it and say so, or refuse with "byte-order mark" in the message."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.core.errors import BenchError
from bench.data.miracl import read_topics
from bench.integrity.datalock import read_lock
from bench.rehearse.inputs import load_beir

BOM = b"\xef\xbb\xbf"


def test_topics_with_bom_and_crlf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "plain.tsv"
    plain.write_bytes(b"0#0\tWer war Kaiser?\n1#0\tWo liegt Bonn?\n")
    marked = tmp_path / "marked.tsv"
    marked.write_bytes(BOM + b"0#0\tWer war Kaiser?\r\n1#0\tWo liegt Bonn?\r\n")
    assert read_topics(marked) == read_topics(plain) == {"0#0": "Wer war Kaiser?", "1#0": "Wo liegt Bonn?"}
    err = capsys.readouterr().err
    assert f"{marked}: starts with a UTF-8 byte-order mark" in err and str(plain) not in err


def test_beir_files_with_bom(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "beir"
    (d / "qrels").mkdir(parents=True)
    (d / "corpus.jsonl").write_bytes(BOM + b'{"_id": "d1", "title": "T", "text": "Bonn"}\r\n')
    (d / "queries.jsonl").write_bytes(BOM + b'{"_id": "q1", "text": "Wo liegt Bonn?"}\n')
    (d / "qrels" / "test.tsv").write_bytes(BOM + b"query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\n")
    inputs = load_beir(d)
    assert inputs.qrels == {"q1": {"d1": 1}} and inputs.queries == {"q1": "Wo liegt Bonn?"}
    assert [p.docid for p in inputs.corpus] == ["d1"]
    assert capsys.readouterr().err.count("byte-order mark") == 3


def test_lock_with_bom_is_refused(tmp_path: Path, repo_root: Path) -> None:
    lock = tmp_path / "datasets.lock"
    shutil.copy(repo_root / "datasets.lock", lock)
    assert read_lock(lock)  # the committed lock reads
    lock.write_bytes(BOM + lock.read_bytes())
    with pytest.raises(BenchError, match="byte-order mark") as err:
        read_lock(lock)
    assert str(lock) in err.value.message
    json.loads(lock.read_bytes()[3:])  # the rest is the same valid lock: only the mark is refused
