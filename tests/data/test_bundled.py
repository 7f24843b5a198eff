"""The bundled rehearsal sample loads with the documented counts and rules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.core.errors import BenchError
from bench.core.paths import bundled_dir
from bench.data import IMPORT_ORDER, Passage, docid_key, sort_passages
from bench.data.bundled import load_sample, split_prompt


def test_sample_counts() -> None:
    s = load_sample()
    assert len(s.queries) == 305
    assert s.qrels_path.is_file()
    assert len(s.judged) == 3103
    assert all(p.title == "" for p in s.judged)
    assert s.skipped_null_prompts == 24
    assert s.notes["nomiracl_dropped_as_judged"] == 69
    assert len(s.nomiracl) == 4299  # 4,368 docids with a prompt, minus 69 in the judged pool
    assert all(p.title for p in s.nomiracl)
    corpus = s.corpus
    assert len(corpus) == 7402 == len({p.docid for p in corpus})
    keys = [docid_key(p.docid) for p in corpus]
    assert keys == sorted(keys)


def test_passage_text_is_title_newline_text() -> None:
    p = Passage("1#0", "Fußball", "Ein Spiel.")
    assert p.passage_text == "Fußball\nEin Spiel."
    assert Passage("1#0", "", "x").passage_text == "\nx"


def test_id_order_is_numeric() -> None:
    ids = ["10#10", "10#2", "9#2", "10#0"]
    got = [p.docid for p in sort_passages([Passage(i, "", "t") for i in ids])]
    assert got == ["9#2", "10#0", "10#2", "10#10"]
    assert "numerically" in IMPORT_ORDER
    # other corpora (bench rehearse --dataset): MIRACL ids, then numeric ids by number, then the rest
    mixed = ["b", "10", "2", "1#0", "a", "01x"]
    got = [p.docid for p in sort_passages([Passage(i, "", "t") for i in mixed])]
    assert got == ["1#0", "2", "10", "01x", "a", "b"]
    with pytest.raises(BenchError, match="empty passage id"):
        docid_key("")
    with pytest.raises(BenchError, match="twice"):
        sort_passages([Passage("1#1", "", "a"), Passage("1#1", "", "b")])


def test_title_split_first_colon() -> None:
    prompt = "Q\n\nCONTEXTS:\n[1] Star: Wars: text one\n\n[2] B: two\n\nOUTPUT:\n"
    assert split_prompt(prompt, 2, "x") == [("Star", "Wars: text one"), ("B", "two")]
    with pytest.raises(BenchError, match=r"\[1\]..\[3\]"):
        split_prompt(prompt, 3, "x")
    with pytest.raises(BenchError, match="markers"):
        split_prompt("no markers", 2, "x")


def test_malformed_jsonl_names_file_and_line(tmp_path: Path) -> None:
    root = tmp_path / "bundled"
    shutil.copytree(bundled_dir(), root)
    f = root / "miracl-de-nomiracl" / "relevant.de.test.vanilla_prompt.jsonl"
    lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = "{not json\n"
    f.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(BenchError, match=r"relevant.de.test.vanilla_prompt.jsonl:3"):
        load_sample(root)


def test_conflicting_duplicate_docid(tmp_path: Path) -> None:
    root = tmp_path / "bundled"
    shutil.copytree(bundled_dir(), root)
    f = root / "miracl-de-nomiracl" / "relevant.de.test.vanilla_prompt.jsonl"
    rows = [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines()]
    rows.append(dict(rows[0], prompt=rows[0]["prompt"].replace("[1] ", "[1] X", 1)))
    f.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(BenchError, match="differs from"):
        load_sample(root)
