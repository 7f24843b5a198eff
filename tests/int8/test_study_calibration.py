"""The study's calibration set on fake snapshots laid out like the hub: test-B topics of miracl/miracl, the
71k parquet and the full-corpus shards; refusals when a piece is missing or the corpus length differs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.core.errors import BenchError
from bench.data.hub import CORPUS_71K_FILE, CORPUS_FULL_DIR
from bench.int8.calibration import text_sha256
from bench.int8.study_data import draw_full_corpus, load_testb_topics, study_calibration, study_texts

N_FULL = 64


def _snapshots(tmp_path: Path, *, topics_name: str = "topics.miracl-v1.0-de-testB.tsv") -> dict[str, Path]:
    miracl = tmp_path / "miracl"
    topics = miracl / "miracl-v1.0-de" / "topics" / topics_name
    topics.parent.mkdir(parents=True)
    topics.write_text("".join(f"t{i}\tTest-B Frage {i}?\n" for i in range(12)), encoding="utf-8")
    full = tmp_path / "full"
    (full / CORPUS_FULL_DIR).mkdir(parents=True)
    rows = [{"docid": f"{i}#0", "title": f"T{i}", "text": f"Text {i}"} for i in range(N_FULL)]
    for s in range(32):  # the German corpus has 32 shards (the loader checks it)
        with gzip.open(full / CORPUS_FULL_DIR / f"docs-{s}.jsonl.gz", "wt", encoding="utf-8") as fh:
            for r in rows[s * 2 : (s + 1) * 2]:
                fh.write(json.dumps(r) + "\n")
    c71 = tmp_path / "c71"
    (c71 / CORPUS_71K_FILE).parent.mkdir(parents=True)
    ids = [f"{i}#0" for i in range(0, N_FULL, 3)]  # every third passage is in the 71k corpus
    table = pa.table({"_id": ids, "title": ["t"] * len(ids), "text": ["x"] * len(ids)})
    pq.write_table(table, c71 / CORPUS_71K_FILE)
    return {"miracl": miracl, "corpus_71k": c71, "corpus_full": full}


def test_pairs_outside_dev_and_71k_with_hashes(tmp_path: Path) -> None:
    snaps = _snapshots(tmp_path)
    cal, queries, texts = study_calibration({"dev1"}, n=5, total=N_FULL, **snaps)
    again, _, _ = study_calibration({"dev1"}, n=5, total=N_FULL, **snaps)
    assert cal.digest() == again.digest() and cal.seed == 20261009 and len(cal.pairs) == 5
    assert all(int(d.split("#")[0]) % 3 != 0 for _, d in cal.pairs)  # never a 71k passage
    assert cal.checks["topics_file"] == "topics.miracl-v1.0-de-testB.tsv"
    assert cal.query_sha256[0] == text_sha256(queries[cal.pairs[0][0]])
    pairs = study_texts(cal, miracl=snaps["miracl"], corpus_full=snaps["corpus_full"])
    assert pairs[0] == (queries[cal.pairs[0][0]], texts[cal.pairs[0][1]])
    assert texts[cal.pairs[0][1]].startswith("T")  # the plan's title + "\n" + text


def test_refusals(tmp_path: Path) -> None:
    snaps = _snapshots(tmp_path, topics_name="topics.miracl-v1.0-de-dev.tsv")
    with pytest.raises(
        BenchError, match=r"no German test-B topics .* found \['topics.miracl-v1.0-de-dev.tsv'\]"
    ):
        load_testb_topics(snaps["miracl"])
    other = _snapshots(tmp_path / "b")
    with pytest.raises(BenchError, match="dev queries"):
        study_calibration({"t3", "t7"} | {f"t{i}" for i in range(12)}, n=5, total=N_FULL, **other)
    with pytest.raises(BenchError, match="64 passages streamed, the plan says 65"):
        draw_full_corpus(set(), n=5, seed=1, snapshot=other["corpus_full"], total=65)
    with pytest.raises(BenchError, match="full-corpus folder missing"):
        draw_full_corpus(set(), n=5, seed=1, snapshot=tmp_path / "nothing", total=N_FULL)
