"""bench.core.journal: append-only JSONL, fsynced, resumable; torn last line dropped, earlier damage
refused."""

from __future__ import annotations

import io
import json
import math
import multiprocessing
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.core.journal import Journal, JournalError, encode, record_key


def rec(qid: str, *, depth: int = 100, **extra: object) -> dict[str, object]:
    return {"stage": "s", "model": "m", "depth": depth, "qid": qid, **extra}


def test_append_then_reopen_skips_completed(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    with Journal(path) as j:
        j.append(rec("q1", scores=[0.5]))
        j.append(rec("q2", scores=[0.25]))
        assert ("s", "m", 100, "q1") in j
    with Journal(path) as j:
        assert j.completed == {("s", "m", 100, "q1"), ("s", "m", 100, "q2")}
        assert [r["qid"] for r in j.records] == ["q1", "q2"]
        assert j.dropped_torn_line is None
    assert path.read_bytes().count(b"\n") == 2


def test_duplicate_append_refused(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.jsonl") as j:
        j.append(rec("q1"))
        with pytest.raises(JournalError, match="already recorded"):
            j.append(rec("q1"))


@pytest.mark.parametrize("tail", [b'{"stage":"s","mod', b'{"stage":"s","model":"m","depth":100,"qid":"q3"}'])
def test_torn_last_line_without_newline_is_dropped_and_reported(tmp_path: Path, tail: bytes) -> None:
    path = tmp_path / "j.jsonl"
    with Journal(path) as j:
        j.append(rec("q1"))
        j.append(rec("q2"))
    good = path.read_bytes()
    path.write_bytes(good + tail)
    err = io.StringIO()
    with Journal(path, stream=err) as j:
        assert len(j) == 2
        assert j.dropped_torn_line == tail
        j.append(rec("q3"))
    assert "dropped a torn last line" in err.getvalue()
    assert str(path) in err.getvalue()
    assert path.read_bytes() == good + encode(rec("q3"))


def test_undecodable_last_line_with_newline_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_bytes(encode(rec("q1")) + b'{"stage": \xff\xfe\n')
    err = io.StringIO()
    with Journal(path, stream=err) as j:
        assert [r["qid"] for r in j] == ["q1"]
    assert path.read_bytes() == encode(rec("q1"))
    assert "line 2" in err.getvalue()


def test_malformed_earlier_line_is_an_error_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_bytes(encode(rec("q1")) + b"garbage\n" + encode(rec("q3")))
    with pytest.raises(JournalError, match=r"j\.jsonl, line 2"):
        Journal(path)
    # the damaged file is left untouched for inspection
    assert b"garbage" in path.read_bytes()


def test_earlier_record_without_key_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"stage":"s"}\n' + encode(rec("q2")))
    with pytest.raises(JournalError, match=r"line 1: record lacks key field"):
        Journal(path)


def test_duplicate_line_in_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_bytes(encode(rec("q1")) + encode(rec("q1")) + encode(rec("q2")))
    with pytest.raises(JournalError, match=r"line 2: duplicate record .* \(first at line 1\)"):
        Journal(path)


def test_non_finite_numbers_refused(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.jsonl") as j:
        with pytest.raises(ValueError, match="finite"):
            j.append(rec("q1", scores=[math.nan]))
        assert len(j) == 0
    assert (tmp_path / "j.jsonl").read_bytes() == b""


def test_bad_key_types_refused() -> None:
    with pytest.raises(ValueError, match="depth"):
        record_key({"stage": "s", "model": "m", "depth": True, "qid": "q"})
    with pytest.raises(ValueError, match="strings"):
        record_key({"stage": "s", "model": "m", "depth": 3, "qid": 7})


def _hold_lock(path: str, ready: object, release: object) -> None:
    with Journal(Path(path)):
        ready.set()  # type: ignore[attr-defined]
        release.wait(10)  # type: ignore[attr-defined]


def test_second_writer_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_hold_lock, args=(str(path), ready, release))
    proc.start()
    try:
        assert ready.wait(10)
        with pytest.raises(JournalError, match="another process"):
            Journal(path)
    finally:
        release.set()
        proc.join(10)


finite = st.floats(allow_nan=False, allow_infinity=False)
float32s = (
    st.integers(0, 2**32 - 1)
    .map(lambda b: struct.unpack("<f", struct.pack("<I", b))[0])
    .filter(math.isfinite)
)


@settings(max_examples=150, deadline=None)
@given(scores=st.lists(st.one_of(finite, float32s), max_size=30), qid=st.text(min_size=1, max_size=12))
def test_scores_round_trip_bit_exactly(
    tmp_path_factory: pytest.TempPathFactory, scores: list[float], qid: str
) -> None:
    path = tmp_path_factory.mktemp("j") / "j.jsonl"
    with Journal(path) as j:
        j.append(rec(qid, scores=scores))
    with Journal(path) as j:
        back = j.records[0]["scores"]
    assert [struct.pack("<d", x) for x in back] == [struct.pack("<d", x) for x in scores]
    assert back == json.loads(encode(rec(qid, scores=scores)))["scores"]


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 8), cut=st.integers(0, 10_000))
def test_truncation_anywhere_keeps_a_prefix_of_records(
    tmp_path_factory: pytest.TempPathFactory, n: int, cut: int
) -> None:
    """A crash can cut the file at any byte: reopening always yields the records wholly written before it."""
    path = tmp_path_factory.mktemp("j") / "j.jsonl"
    with Journal(path) as j:
        for i in range(n):
            j.append(rec(f"q{i}", scores=[i / 3, -i * 1e-7]))
    data = path.read_bytes()
    cut = cut % (len(data) + 1)
    path.write_bytes(data[:cut])
    with Journal(path, stream=io.StringIO()) as j:
        kept = [r["qid"] for r in j]
        complete_lines = data[:cut].count(b"\n")
        assert kept == [f"q{i}" for i in range(complete_lines)]
        # and it is appendable again, continuing the same sequence
        for i in range(complete_lines, n):
            j.append(rec(f"q{i}", scores=[i / 3, -i * 1e-7]))
    assert path.read_bytes() == data
