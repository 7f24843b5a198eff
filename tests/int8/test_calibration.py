"""Calibration sets: seeded draws, disjointness from dev and from the excluded pool, the file's checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.core.errors import BenchError
from bench.data import Passage
from bench.data.bundled import load_sample
from bench.int8.calibration import draw_pairs, read_set, text_sha256, write_set
from bench.int8.rehearsal_data import read_nomiracl_queries, rehearsal_calibration

QUERIES = {f"q{i}": f"Frage {i}?" for i in range(10)}
PASSAGES = [Passage(f"{i}#0", f"T{i}", f"Text {i}") for i in range(30)]


def _draw(**kw: object) -> object:
    args: dict[str, object] = dict(
        n=5,
        seed=7,
        source="test",
        dev_queries=["dev1"],
        excluded_passages=[f"{i}#0" for i in range(0, 30, 2)],
        excluded_name="pool",
    )
    args.update(kw)
    return draw_pairs(QUERIES, PASSAGES, **args)  # type: ignore[arg-type]


def test_draw_is_seeded_distinct_and_outside_the_excluded_pool() -> None:
    a, b, c = _draw(), _draw(), _draw(seed=8)
    assert a.pairs == b.pairs and a.digest() == b.digest()  # type: ignore[attr-defined]
    assert a.pairs != c.pairs  # type: ignore[attr-defined]
    qs = [q for q, _ in a.pairs]  # type: ignore[attr-defined]
    ds = [d for _, d in a.pairs]  # type: ignore[attr-defined]
    assert len(set(qs)) == 5 and len(set(ds)) == 5
    assert all(int(d.split("#")[0]) % 2 == 1 for d in ds)  # even ids are excluded
    texts = {p.docid: p.passage_text for p in PASSAGES}
    assert a.passage_sha256 == tuple(text_sha256(texts[d]) for d in ds)  # type: ignore[attr-defined]
    assert a.texts(QUERIES, texts, "t")[0] == (QUERIES[qs[0]], texts[ds[0]])  # type: ignore[attr-defined]


def test_dev_overlap_and_too_small_pool_are_refused() -> None:
    with pytest.raises(BenchError, match="dev queries"):
        _draw(dev_queries=["q3"])
    with pytest.raises(BenchError, match="15 passages outside pool; 20 of each"):
        _draw(n=20)


def test_file_round_trip_and_refusals(tmp_path: Path) -> None:
    cal = _draw()
    path = tmp_path / "cal.json"
    write_set(path, cal)  # type: ignore[arg-type]
    back = read_set(path)
    assert back.digest() == cal.digest()  # type: ignore[attr-defined]
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    assert read_set(bom).pairs == back.pairs
    with pytest.raises(BenchError, match="dev queries"):
        read_set(path, dev_queries=[back.pairs[0][0]])
    with pytest.raises(
        BenchError, match="no calibration set; run `docker compose run --rm bench-cpu int8 calibration-set`"
    ):
        read_set(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "other"}))
    with pytest.raises(BenchError, match="not a calibration set"):
        read_set(bad)
    texts = {p.docid: p.passage_text + " changed" for p in PASSAGES}
    with pytest.raises(BenchError, match="differs from the SHA-256"):
        back.texts(QUERIES, texts, "t")


def test_rehearsal_set_is_nomiracl_outside_dev_and_judged_pool() -> None:
    sample = load_sample()
    queries = read_nomiracl_queries()
    assert len(queries) == 443  # distinct NoMIRACL German test queries with a prompt
    assert queries["9293217#0"] == "Welches Land gilt als Geburtsort des Fußballs?"
    cal, q, texts = rehearsal_calibration(sample)
    assert len(cal.pairs) == 300 and cal.seed == 20261009
    judged = {p.docid for p in sample.judged}
    assert not {qid for qid, _ in cal.pairs} & set(sample.queries)
    assert not {d for _, d in cal.pairs} & judged
    assert len(cal.texts(q, texts, "rehearsal")) == 300
