"""The columnar fast path reads exactly what the line-by-line reference reader reads
(analysis.inputs.trec_fast).

Every file either gives the same run on both paths or the same error (the fast path then defers to the
reference reader, which words it); and the reports of a benchmark-shaped and a rehearsal-shaped study are
byte-identical with either reader ("results byte-identical to today's").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.inputs.trec import TrecFormatError, read_run, read_run_table
from analysis.inputs.trec_fast import read_fast
from analysis.reporting.report import write_report
from analysis.simulation.synthetic import write_study
from tests.support.scripts import benchmark

Qrels = dict[str, dict[str, int]]
GOOD = "q1 Q0 d1 1 3.5 t\nq1 Q0 d2 2 3.5 t\nq1 Q0 d3 3 -1e-05 t\nq2 Q0 d9 1 0.25 t\n"
BOM = b"\xef\xbb\xbf"

# (file bytes, whether the fast path reads it itself): every other case is decided by the reference reader
CASES: list[tuple[bytes, bool]] = [
    (GOOD.encode(), True),
    (BOM + GOOD.encode(), True),
    (GOOD.replace("\n", "\r\n").encode(), True),
    (BOM + GOOD.replace("\n", "\r\n").encode(), True),
    (GOOD.rstrip("\n").encode(), True),  # no newline at the end
    (GOOD.replace("\n", "\n\n").encode(), False),  # blank lines: the reference reader skips them
    # lines shuffled
    (b"q2 Q0 d9 1 0.25 t\nq1 Q0 d3 3 -1e-05 t\nq1 Q0 d1 1 3.5 t\nq1 Q0 d2 2 3.5 t\n", True),
    (b"q1 Q0 d1 1 +1.5 t\nq1 Q0 d2 2 1. t\nq1 Q0 d3 3 .5 t\nq1 Q0 d4 04 1e-3 t\n", True),
    (b'q1 Q0 "d1 1 3.5 t\n', True),  # a quote is an ordinary character in TREC ids
    # decided by the reference reader: a fast-path limitation (same result) or an error (same message)
    (GOOD.replace(" ", "\t").encode(), False),
    (GOOD.replace(" ", "  ").encode(), False),
    (GOOD.replace("d9", "dä").encode(), False),
    (b"q1 Q0 d1 1 3.5 t\rq1 Q0 d2 2 3.0 t\n", False),  # a lone CR is whitespace for the reference
    (b"q1 Q0 d\x0b1 1 3.5 t\n", False),
    (b"q1 Q0 d1\x00 1 3.5 t\n", False),
    (b"q1 Q0 d\x0b1 1 3.5 t", False),  # a control byte where the missing last line end would be counted
    (GOOD.replace("\n", "\n\n", 1).replace("d9", "d\x009").encode(), False),  # a blank line and a NUL
    (b"q1 Q0 d\x7f1 1 3.5 t\n", False),  # DEL: not printable (checked on the bytes)
    (b"q1 Q0 d1 1 3.5 t\x1f\n", False),
    (b"q1 Q0 d1 1 3.5 t\r\r\n", False),
    (b"q1  d1 1 3.5 t\nq1 Q0 d2 2 3.0 t\n", False),  # an empty Q0 field on the first line only
    (b"q1 Q0 d1 0x10 3.5 t\n", False),  # pyarrow would read a hexadecimal rank
    (b"q1 Q0 d1 1 0x10 t\n", False),
    (b"q1 Q0 d1 1 1_000 t\n", False),
    (b"q1 Q0 d1 1_0 1.0 t\n", False),
    (b"q1 Q0 d1 1 nan t\n", False),
    (b"q1 Q0 d1 1 inf t\n", False),
    (b"q1 Q0 d1 1 1e400 t\n", False),
    (b"q1 Q0 d1 1 Infinity t\n", False),
    (b" Q0 d1 1 3.5 t\n", False),  # an empty first column: 5 columns for the reference
    (b"q1 Q0 d1 1 3.5 t \n", False),
    (b"q1 Q0 d1 1 3.5\n", False),
    (b"q1 Q0 d1 -1 3.0 t\nq1 Q0 d2 1 2.0 t\n", False),
    (b"q1 Q0 d1 1 3.0 t\nq1 Q0 d2 3 2.0 t\n", False),
    (b"q1 Q0 d1 1 3.0 t\nq1 Q0 d2 1 2.0 t\n", False),
    (b"q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 2.0 t\n", False),
    (b"q1 Q0 d1 1 2.0 t\nq1 Q0 d1 2 1.0 t\n", False),
    (b"q1 Q0 d1 1 x t\n", False),
    (b"q1 Q0 d1 1.5 1.0 t\n", False),
    (b"q1 Q0 d1 99999999999999999999 1.0 t\n", False),
    (b"", False),
    (b"\n \n", False),
    (BOM + BOM + GOOD.encode(), False),
    (b"q1 Q0 d1 1 1.0 t\nq1 Q0 d\xe42 2 0.5 t\n", False),
]


def _outcome(path: Path, qrels_qids: set[str] | None = None) -> object:
    try:
        t = read_run_table(path, qrels_qids=qrels_qids)
    except TrecFormatError as exc:
        return ("error", str(exc), exc.line)
    return (t.qids, t.offsets.tolist(), t.docids, t.scores.tolist(), t.sha256)


@pytest.mark.parametrize(("data", "fast"), CASES)
def test_both_readers_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, fast: bool) -> None:
    path = tmp_path / "run.trec"
    path.write_bytes(data)
    assert (read_fast(data) is not None) is fast  # the comparison below really compares two paths
    monkeypatch.setenv("ANALYSIS_TREC_READER", "fast")
    got = _outcome(path)
    monkeypatch.setenv("ANALYSIS_TREC_READER", "reference")
    assert got == _outcome(path)
    # unknown queries are the reference's to word, too
    monkeypatch.setenv("ANALYSIS_TREC_READER", "fast")
    known = _outcome(path, {"q1"})
    monkeypatch.setenv("ANALYSIS_TREC_READER", "reference")
    assert known == _outcome(path, {"q1"})


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["q1", "q2", "q10"]),
            st.sampled_from(["a", "b", "c", "d#1"]),
            st.sampled_from([0.5, -2.0, 1e-300, 3.0, 0.1 + 0.2, 7.0]),
        ),
        min_size=1,
        max_size=20,
        unique_by=lambda r: (r[0], r[1]),
    ),
    crlf=st.booleans(),
    bom=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_random_runs_read_the_same(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[tuple[str, str, float]],
    crlf: bool,
    bom: bool,
    seed: int,
) -> None:
    by_q: dict[str, list[tuple[str, float]]] = {}
    for q, d, s in rows:
        by_q.setdefault(q, []).append((d, s))
    lines = []
    for q, items in by_q.items():
        items.sort(key=lambda x: -x[1])
        lines += [f"{q} Q0 {d} {r} {s!r} tag" for r, (d, s) in enumerate(items, start=1)]
    np.random.default_rng(seed).shuffle(lines)
    data = (BOM if bom else b"") + ("\r\n" if crlf else "\n").join(lines).encode() + b"\n"
    fast = read_fast(data)
    assert fast is not None
    path = tmp_path_factory.mktemp("fast") / "r.trec"
    path.write_bytes(data)
    import os

    os.environ["ANALYSIS_TREC_READER"] = "reference"
    try:
        reference = read_run(path)
    finally:
        del os.environ["ANALYSIS_TREC_READER"]
    assert read_run(path) == reference


def test_a_file_of_several_blocks_reads_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over pyarrow's 4 MiB block the id columns come in several dictionary-encoded chunks
    (trec_fast._encoded)."""
    rng = np.random.default_rng(3)
    lines = []
    for q in range(2300):
        docs, scores = rng.permutation(5000)[:100].tolist(), np.sort(rng.random(100))[::-1].tolist()
        lines += [
            f"q{q} Q0 doc{d}#{q % 7} {r} {s!r} run"
            for r, (d, s) in enumerate(zip(docs, scores, strict=True), start=1)
        ]
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) > 2 * (1 << 22)  # three blocks at least
    fast = read_fast(data)
    assert fast is not None
    path = tmp_path / "big.trec"
    path.write_bytes(data)
    got = _outcome(path)
    monkeypatch.setenv("ANALYSIS_TREC_READER", "reference")
    assert got == _outcome(path)


def _quality(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "quality").iterdir())} | {
        "report.md": (out / "report.md").read_bytes()
    }


def test_reports_are_byte_identical_with_either_reader(
    miracl_qrels: Qrels, miracl_qrels_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the real qrels' first 80 queries (a file in tmp_path): each report's time scales with them, and the
    # readers' and the threads' byte identity does not depend on the count
    lines = miracl_qrels_path.read_text(encoding="utf-8").splitlines(keepends=True)
    keep = set(sorted(miracl_qrels)[:80])
    miracl_qrels = {q: miracl_qrels[q] for q in sorted(keep)}
    miracl_qrels_path = tmp_path / "qrels-80.tsv"
    miracl_qrels_path.write_text("".join(x for x in lines if x.split()[0] in keep), encoding="utf-8")
    bench_analysis = benchmark("bench_analysis")  # the benchmark study; small here: 2 stages, 3 models
    MODELS, STAGES = bench_analysis.MODELS, bench_analysis.STAGES
    bench_runs = tmp_path / "bench" / "runs"
    write_study(
        bench_runs,
        miracl_qrels,
        stages=STAGES[:2],
        models=dict.fromkeys(MODELS[:3], 1.5),
        depths=(20, 50, 100),
        tails=True,
    )
    rehearsal_runs = tmp_path / "rehearsal" / "runs"  # the rehearsal's shape: one stand-in, a reference stage
    write_study(
        rehearsal_runs,
        miracl_qrels,
        stages=["vector-71k"],
        models={"minilm-standin": 1.1},
        depths=(20, 50, 100),
        tails=True,
    )
    (rehearsal_runs / "first-stage" / "keyword-plain-71k.trec").write_bytes(
        (rehearsal_runs / "first-stage" / "vector-71k.trec").read_bytes()
    )
    for runs, kwargs in ((bench_runs, {}), (rehearsal_runs, {"stage_flags": {}})):
        outs = []
        for reader, threads in (("reference", "1"), ("fast", "1"), ("fast", "3")):
            monkeypatch.setenv("ANALYSIS_TREC_READER", reader)
            monkeypatch.setenv("ANALYSIS_THREADS", threads)
            out = tmp_path / f"{runs.parent.name}-{reader}-{threads}"
            write_report(runs, miracl_qrels_path, out, figures=False, **kwargs)  # type: ignore[arg-type]
            outs.append(_quality(out))
        assert outs[0] == outs[1] == outs[2]
        assert len(outs[0]) >= 3


def test_numpy_of_equals_pyarrows_own_conversion() -> None:
    """numpy_of reads the buffers itself (pyarrow's to_numpy and fill_null import pandas): the same
    values as pyarrow's conversion for plain, sliced, chunked and null-holding columns."""
    import pyarrow as pa  # heavy: only here

    from analysis.inputs.trec_fast import numpy_of, string_array

    plain = pa.array(np.array([3.5, -1.0, 2.25, 0.0, 7.0]))
    ints = pa.array(np.array([5, 4, 3, 2, 1, 0, -1], dtype=np.int64))
    holes = pa.array([1, None, 3, None, 5, 6, 7, 8, 9, None], type=pa.int32())
    for column in (plain, ints, plain.slice(1, 3), ints.slice(2), pa.chunked_array([ints, ints.slice(3)])):
        assert np.array_equal(numpy_of(column), column.to_numpy())
    for column in (holes, holes.slice(1, 7), holes.slice(3)):
        assert np.array_equal(numpy_of(column, null=-1), column.fill_null(-1).to_numpy())
    with pytest.raises(TypeError, match="nulls and no fill value"):
        numpy_of(holes)
    with pytest.raises(TypeError, match="string"):
        numpy_of(pa.array(["a"]))
    ids = ["doc#1", "a,b", '"quoted"', "ünï", "x" * 300]
    assert string_array(ids).to_pylist() == ids and string_array([]).to_pylist() == []
    with pytest.raises(ValueError, match="2 values became 3 rows"):
        string_array(["a\nb", "c"])


def _with_byte(line: bytes, field: int, byte: bytes, where: str) -> bytes:
    """``line`` with ``byte`` before, inside (after the first character) or after its field ``field``."""
    parts = line.rstrip(b"\n").split(b" ")
    value = parts[field]
    parts[field] = {"before": byte + value, "inside": value[:1] + byte + value[1:], "after": value + byte}[
        where
    ]
    return b" ".join(parts) + b"\n"


# the files the fast path sends to the reference reader since it stopped looking at every byte
# (trec_fast's docstring): a byte out of 0x20-0x7e in each field, a second byte-order mark, an empty line at
# each position; and line ends it reads itself (CRLF mixed with LF, a missing last line end)
_LINE = b"q1 Q0 d1 1 3.5 t\n"
_TWO = GOOD.encode()
DEFERRED = [
    _with_byte(_LINE, field, bytes([code]), where)
    for field in range(6)
    for code in (0x00, 0x01, 0x0B, 0x0C, 0x1B, 0x1F, 0x7F, 0x80, 0xE4, 0xFF)
    for where in ("before", "inside", "after")
] + [
    _TWO + _with_byte(b"q2 Q0 d8 2 0.125 t\n", 5, b"\x01", "after"),  # in a later line's tag only
    _TWO + _with_byte(b"q3 Q0 d8 1 0.125 t\n", 0, b"\x1f", "inside"),  # in a later query's id only
    _TWO.replace(b"Q0 d3", b"Q0 d\x003"),  # in one docid of many
    _TWO.replace(b"q1 Q0 d2", b"q1 \x0b d2"),  # as a whole Q0 field
    BOM + BOM + _TWO,
    BOM + b"\n" + _TWO,
    b"\n" + _TWO,
    b"\r\n" + _TWO,
    _TWO.replace(b"\n", b"\n\n", 2),
    _TWO.replace(b"\n", b"\n\r\n", 1),
    _TWO + b"\n",
    _TWO + b"\r\n",
    _TWO + b"\n\n",
    _TWO.replace(b"\n", b"\r\n") + b"\r\n",
    _TWO.replace(b" 1 3.5", b" 1\t3.5"),  # a tab beside a number: pyarrow trims it
    _TWO.replace(b" 3.5 t", b" 3.5\t t"),
]
READ_FAST = [
    _TWO.replace(b"\n", b"\r\n", 2),  # CRLF and LF mixed
    _TWO.replace(b"\n", b"\r\n", 1).rstrip(b"\n"),
    _TWO.replace(b"\n", b"\r\n").rstrip(b"\r\n"),
    _TWO.replace(b" t\n", b" ~!#$%&'()*+,-./:;<=>?@[\\]^_`{|}\n"),  # every printable byte in the tag
]


def test_the_fast_path_reads_exactly_the_plain_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file above gives the same run or the same error on both paths, and goes the path it should; the
    qids of a shuffled file are coded by pyarrow's hash when their runs are many (trec_fast._MAX_RUNS)."""
    from analysis.inputs import trec_fast

    cases = [(data, False) for data in DEFERRED] + [(data, True) for data in READ_FAST]
    shuffled = (
        b"q2 Q0 d9 1 0.25 t\nq1 Q0 d3 3 -1e-05 t\nq3 Q0 d1 1 3.5 t\nq1 Q0 d1 1 3.5 t\nq1 Q0 d2 2 3.5 t\n"
    )
    path = tmp_path / "run.trec"
    for data, fast in [*cases, (shuffled, True)]:
        assert (read_fast(data) is not None) is fast, data
        path.write_bytes(data)
        monkeypatch.setenv("ANALYSIS_TREC_READER", "fast")
        got = _outcome(path)
        monkeypatch.setenv("ANALYSIS_TREC_READER", "reference")
        assert got == _outcome(path), data
    monkeypatch.setattr(trec_fast, "_MAX_RUNS", 2)
    run = read_fast(shuffled)
    assert run is not None and run.qids == ("q1", "q2", "q3") and run.offsets.tolist() == [0, 3, 4, 5]
    assert run.docids() == ["d1", "d2", "d3", "d9", "d1"]


def test_pyarrows_number_parsers_refuse_every_byte_out_of_the_printable_range() -> None:
    """The fast path checks bytes below 0x20 and above 0x7e only in the id fields (trec_fast's docstring):
    in a rank or a score, before, inside or after the number, pyarrow's parsers refuse every one of them but
    the tab they trim (which the fast path searches the file for). Checked on this pyarrow, for every byte."""
    import pyarrow as pa  # heavy: only here
    import pyarrow.csv as pacsv

    from analysis.inputs import trec_fast

    def parsed(line: bytes) -> bool:
        try:
            pacsv.read_csv(
                pa.py_buffer(line),
                read_options=trec_fast._READ_ONE_BLOCK,
                parse_options=trec_fast._PARSE,
                convert_options=trec_fast._CONVERT,
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return False
        return True

    line = b"q1 Q0 d1 12 3.25 t\n"
    assert parsed(line)
    accepted = {
        (field, code, where)
        for field in (3, 4)
        for code in [*range(0x20), *range(0x7F, 0x100)]
        for where in ("before", "inside", "after")
        if code not in (0x0A, 0x0D) and parsed(_with_byte(line, field, bytes([code]), where))
    }
    assert accepted == {(field, 0x09, where) for field in (3, 4) for where in ("before", "after")}


_FIRST_DOCIDS = ("d1", "d2", "d3", "d4", "d9", '"d1', "a", "b", "c", "d#1")


def _same_run(got: object, want: object) -> bool:
    if got is None or want is None:
        return got is None and want is None
    return (got.qids, got.offsets.tolist(), got.docids(), got.scores.tolist()) == (  # type: ignore[attr-defined]
        want.qids,  # type: ignore[attr-defined]
        want.offsets.tolist(),  # type: ignore[attr-defined]
        want.docids(),  # type: ignore[attr-defined]
        want.scores.tolist(),  # type: ignore[attr-defined]
    )


def test_runs_coded_in_their_first_stages_names_read_as_read_fast_reads_them() -> None:
    """The report's reading of a reranked run (read_pending, then coded_runs with its first stage's names)
    gives what read_fast gives, on every file above: coded in the first stage's names where each docid is
    one of them (a repeated one sends the file to the reference reader), else in a dictionary of its own
    (names that lack a docid, names the columnar reader did not check, no names)."""
    import pyarrow as pa  # heavy: only here

    from analysis.inputs.trec_fast import coded_runs, read_pending

    lines = [f"q1 Q0 {d} {r} 1.0 t\n" for r, d in enumerate(_FIRST_DOCIDS, start=1)]
    first = read_fast("".join(lines).encode())
    assert first is not None
    some = read_fast(b"q1 Q0 d1 1 1.0 t\n")
    assert some is not None
    unchecked = pa.array(["d\xe4", *_FIRST_DOCIDS], type=pa.string())
    files = [data for data, _ in CASES] + DEFERRED + READ_FAST
    shared = 0
    for names in (first.doc_names, some.doc_names, unchecked, None):
        pending = [read_pending(data) for data in files]
        assert [p is None for p in pending] == [read_fast_declines_early(data) for data in files]
        coded = coded_runs([p for p in pending if p is not None], names)
        got = iter(coded)
        for data, p in zip(files, pending, strict=True):
            run = None if p is None else next(got)
            assert _same_run(run, read_fast(data)), (names, data)
            shared += run is not None and run.doc_names is names
    assert shared >= 10  # the first stage's names really were used, for the files whose docids they hold
    repeated = read_pending(b"q1 Q0 d1 1 2.0 t\nq1 Q0 d1 2 1.0 t\n")
    assert repeated is not None and coded_runs([repeated], first.doc_names) == [None]


def read_fast_declines_early(data: bytes) -> bool:
    """Whether read_fast declines ``data`` before its docids (a docid's bytes, emptiness or repeat)."""
    from analysis.inputs import trec_fast

    return trec_fast._read_table(data, trec_fast._CONVERT, None, False) is None


@settings(max_examples=120, deadline=None)
@given(
    tags=st.lists(st.sampled_from(["ab", "ba", "aa", "a", "abc", ""]), min_size=1, max_size=12),
    chunk=st.integers(min_value=1, max_value=12),
)
def test_one_tag_is_every_tag_the_first(tags: list[str], chunk: int) -> None:
    """_one_tag (the tags' bytes compared with themselves one tag later, no copy) against the plain rule:
    every tag equals the first, which is not empty; on tags that are rotations of each other ("ab", "ba"),
    of other lengths, empty, and split into chunks as a file of several blocks is."""
    import pyarrow as pa

    from analysis.inputs import trec_fast

    column = pa.chunked_array(
        [pa.array(tags[i : i + chunk], pa.binary()) for i in range(0, len(tags), chunk)], pa.binary()
    )
    table = pa.table({"tag": column})
    assert trec_fast._one_tag(table) == (tags[0] != "" and all(t == tags[0] for t in tags))
