"""TREC reading, validation, writing; the tie rule (analysis.inputs.trec, analysis.stats.ranking)."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.inputs.trec import TrecFormatError, read_qrels, read_run, read_run_table, write_run
from analysis.stats.ranking import TIE_RULE, rank_by_score

GOOD = "q1 Q0 d1 1 3.5 t\nq1 Q0 d2 2 3.5 t\nq1 Q0 d3 3 -1e-05 t\nq2 Q0 d9 1 0.25 t\n"


def _write(tmp_path: Path, text: str | bytes, name: str = "run.trec") -> Path:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def test_read_run_good(tmp_path: Path) -> None:
    run = read_run(_write(tmp_path, GOOD))
    assert run == {"q1": [("d1", 3.5), ("d2", 3.5), ("d3", -1e-05)], "q2": [("d9", 0.25)]}


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("q1 Q0 d1 1 3.5 t\nq1 Q0 d2 2 t\n", 2, "6 columns"),
        ("q1 Q0 d1 1 3.5 t extra\n", 1, "6 columns"),
        ("q1 Q0 d1 1 abc t\n", 1, "finite float score"),
        ("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 nan t\n", 2, "finite float score"),
        ("q1 Q0 d1 1 inf t\n", 1, "finite float score"),
        ("q1 Q0 d1 x 1.0 t\n", 1, "integer rank"),
        ("q1 Q0 d1 1 2.0 t\nq1 Q0 d1 2 1.0 t\n", 2, "each docid once"),
        ("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 1 1.0 t\n", 2, "each rank once"),
        ("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 2.0 t\n", 2, "do not increase with rank"),
        ("q1 Q0 d2 2 2.0 t\nq1 Q0 d1 1 1.0 t\n", 1, "do not increase with rank"),
        ("q1 Q0 d1 1 1.0 t\nq1 Q0 dä 2 2.0 t\n", 2, "do not increase with rank"),  # non-ASCII path
        ("q1 Q0 dä 1 1.0 t\nq1 Q0 d2 2\n", 2, "6 columns"),
        ("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2.5 0.5 t\n", 2, "integer rank"),
        ("q1 Q0 d1 1 1,5 t\n", 1, "finite float score"),
        ("q1 Q0 d1 1 0x10 t\n", 1, "finite float score"),
        ("q1 Q0 d1 1 1e400 t\n", 1, "finite float score"),
        ("q1 Q0 d1 1 1.0 t\n\nq1 Q0 d2 2 2.0 t\n", 3, "do not increase"),  # blank lines are skipped
        ("q1 Q0  d1 1 1.0\nq1 Q0 d\xa0x 2 0.5 t\n", 1, "6 columns"),  # 5 + 7 columns: 12 tokens in all
        ("q1 Q0 d1 1 1.0 t x\nq1 Q0 d2 2 0.5\n", 1, "6 columns"),
    ],
)
def test_read_run_errors(tmp_path: Path, text: str, line: int, needle: str) -> None:
    p = _write(tmp_path, text)
    with pytest.raises(TrecFormatError) as exc:
        read_run(p)
    assert exc.value.line == line
    assert needle in str(exc.value)
    assert str(p) in str(exc.value) and "Fix:" in str(exc.value)


def test_empty_and_encoding(tmp_path: Path) -> None:
    with pytest.raises(TrecFormatError, match="empty"):
        read_run(_write(tmp_path, "\n  \n"))
    with pytest.raises(TrecFormatError, match="empty"):
        read_run(_write(tmp_path, ""))
    with pytest.raises(TrecFormatError, match="empty"):
        read_qrels(_write(tmp_path, b"", "q.tsv"))
    with pytest.raises(TrecFormatError, match="UTF-8") as exc:
        read_run(_write(tmp_path, b"q1 Q0 d1 1 1.0 t\nq1 Q0 d\xe42 2 0.5 t\n"))
    assert exc.value.line == 2


def test_unknown_queries(tmp_path: Path) -> None:
    p = _write(tmp_path, GOOD)
    with pytest.raises(TrecFormatError, match="'q2'") as exc:
        read_run(p, qrels_qids={"q1"})
    assert exc.value.line == 4
    assert set(read_run(p, qrels_qids={"q1"}, allow_unknown_queries=True)) == {"q1", "q2"}


def test_qrels(tmp_path: Path, miracl_qrels: dict[str, dict[str, int]]) -> None:
    assert len(miracl_qrels) == 305
    assert sum(len(v) for v in miracl_qrels.values()) == 3144
    assert sum(r > 0 for v in miracl_qrels.values() for r in v.values()) == 811
    with pytest.raises(TrecFormatError, match="repeats"):
        read_qrels(_write(tmp_path, "q 0 d 1\nq 0 d 0\n", "q.tsv"))
    with pytest.raises(TrecFormatError, match="integer relevance"):
        read_qrels(_write(tmp_path, "q 0 d x\n", "q.tsv"))
    with pytest.raises(TrecFormatError, match="4 columns"):
        read_qrels(_write(tmp_path, "q 0 d 1 1\n", "q.tsv"))


def test_write_round_trip_full_precision(tmp_path: Path) -> None:
    run = {"b": [("x", 0.1 + 0.2), ("y", 1e-300), ("z", -3.0)], "a": [("x", 5.0)]}
    p = tmp_path / "sub" / "r.trec"
    write_run(p, run, "stage/model@100")
    assert read_run(p) == run
    assert p.read_text().splitlines()[0] == "a Q0 x 1 5.0 stage/model@100"
    assert not list(p.parent.glob(".*tmp"))
    with pytest.raises(ValueError, match="rank_by_score"):
        write_run(p, {"a": [("x", 1.0), ("y", 2.0)]}, "t")
    with pytest.raises(ValueError, match="tag"):
        write_run(p, run, "has space")
    assert read_run(p) == run  # a refused write leaves the old file


lines_strategy = st.lists(
    st.tuples(st.sampled_from(["q1", "q2", "q3"]), st.integers(0, 3)), min_size=1, max_size=40, unique=True
)


@settings(max_examples=60, deadline=None)
@given(rows=lines_strategy, seed=st.integers(0, 2**32 - 1))
def test_shuffling_lines_changes_nothing(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[str, int]], seed: int
) -> None:
    rng = random.Random(seed)
    by_q: dict[str, list[tuple[str, float]]] = {}
    for q, level in rows:
        by_q.setdefault(q, []).append((f"d{len(by_q.get(q, []))}", float(level)))  # ties on purpose
    ranked = {q: rank_by_score([d for d, _ in v], [s for _, s in v]) for q, v in by_q.items()}
    tmp = tmp_path_factory.mktemp("shuffle")
    write_run(tmp / "a.trec", ranked, "t")
    lines = (tmp / "a.trec").read_text().splitlines(keepends=True)
    rng.shuffle(lines)
    (tmp / "b.trec").write_text("".join(lines))
    a, b = read_run(tmp / "a.trec"), read_run(tmp / "b.trec")
    assert a == b == ranked
    ta = read_run_table(tmp / "b.trec")
    assert ta.as_dict() == ranked
    # the table carries the SHA-256 of exactly the bytes it parsed (result files record it)
    assert ta.sha256 == hashlib.sha256((tmp / "b.trec").read_bytes()).hexdigest()


@settings(max_examples=100, deadline=None)
@given(
    scores=st.lists(st.sampled_from([0.0, 1.0, 2.5, -1.0, 1e-9]), min_size=0, max_size=30),
    seed=st.integers(0, 2**32 - 1),
)
def test_tie_rule(scores: list[float], seed: int) -> None:
    docids = [f"d{i}" for i in range(len(scores))]
    ranked = rank_by_score(docids, scores)
    expected = sorted(zip(docids, scores, strict=True), key=lambda x: (-x[1], int(x[0][1:])))
    assert ranked == expected
    # the result depends only on (docid, score, first-stage position), not on how pairs are presented:
    perm = list(range(len(scores)))
    random.Random(seed).shuffle(perm)
    shuffled = [(docids[i], scores[i], i) for i in perm]
    again = rank_by_score(
        [d for d, _, _ in sorted(shuffled, key=lambda x: x[2])],
        [s for _, s, _ in sorted(shuffled, key=lambda x: x[2])],
    )
    assert again == ranked


def test_tie_rule_differs_from_trec_eval() -> None:
    # trec_eval breaks ties by docid descending; we keep first-stage order.
    assert rank_by_score(["a", "b"], [1.0, 1.0]) == [("a", 1.0), ("b", 1.0)]
    assert "first-stage" in TIE_RULE
    with pytest.raises(ValueError, match="NaN"):
        rank_by_score(["a"], [float("nan")])
    with pytest.raises(ValueError, match="duplicate"):
        rank_by_score(["a", "a"], [1.0, 2.0])


@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["q1", "q2"]), st.sampled_from(["a", "b", "c", "d", "e"])),
        min_size=1,
        max_size=12,
        unique=True,
    ),
    sep=st.sampled_from([" ", "\t", "  ", " \t "]),
    end=st.sampled_from(["\n", "\r\n", " \n"]),
    blank=st.booleans(),
    unicode_tag=st.booleans(),
)
def test_parsing_paths_agree(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[tuple[str, str]],
    sep: str,
    end: str,
    blank: bool,
    unicode_tag: bool,
) -> None:
    # the canonical, the numpy and the line-by-line readers give the same run
    counter: dict[str, int] = {}
    lines = []
    for q, d in rows:
        counter[q] = counter.get(q, 0) + 1
        tag = "tä" if unicode_tag else "t"
        lines.append(sep.join([q, "Q0", d, str(counter[q]), repr(1.0 / counter[q]), tag]) + end)
    if blank:
        lines.insert(len(lines) // 2, end)
    tmp = tmp_path_factory.mktemp("paths")
    canonical = tmp / "c.trec"
    canonical.write_text(
        "".join(
            x.replace("\r\n", "\n").replace(sep, " ").replace(" \n", "\n").replace("tä", "t")
            for x in lines
            if x.strip()
        )
    )
    variant = tmp / "v.trec"
    variant.write_bytes("".join(lines).encode("utf-8"))
    assert read_run(canonical) == read_run(variant)


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("q1 Q0 d1 -1 3.0 t\nq1 Q0 d2 1 2.0 t\n", 1, "a rank of at least 1, found -1"),
        ("q1 Q0 d1 0 3.0 t\nq1 Q0 d2 1 2.0 t\n", 1, "a rank of at least 1, found 0"),
        ("q1 Q0 d1 1 3.0 t\nq1 Q0 d2 3 2.0 t\n", 2, "rank 2 is missing"),
        # a rank above the query's passage count is named on its own line (a huge rank on line 1
        # was blamed on line 2)
        ("q1 Q0 d1 2 3.0 t\nq1 Q0 d2 3 2.0 t\n", 2, "found rank 3 (rank 1 is missing)"),
        ("q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\nq1 Q0 d3 2 1.0 t\n", 3, "rank 2 repeats in query 'q1'"),
        ("q1 Q0 d1 1 1_000 t\n", 1, "a finite float score, found '1_000'"),
        ("q1 Q0 d1 1_0 1.0 t\n", 1, "an integer rank, found '1_0'"),
        ("q1 Q0 dä 1 ١ t\n", 1, "a finite float score, found '١'"),  # Arabic-Indic digit: float() takes it
        ("q1 Q0 dä ١ 1.0 t\n", 1, "an integer rank, found '١'"),
        ("q1 Q0 d1 +1 1.0 t\nq1 Q0 d2 2 1e5_0 t\n", 2, "found '1e5_0'"),
    ],
)
def test_ranks_and_numbers_get_the_promised_error(tmp_path: Path, text: str, line: int, needle: str) -> None:
    p = _write(tmp_path, text)
    with pytest.raises(TrecFormatError) as exc:
        read_run(p)
    assert exc.value.line == line
    assert needle in str(exc.value) and "(TREC run file)" in str(exc.value)


def test_every_error_names_the_kind_of_file(tmp_path: Path) -> None:
    with pytest.raises(TrecFormatError) as exc:
        read_qrels(_write(tmp_path, b"", "q.tsv"))
    message = str(exc.value)
    # an empty qrels file gets a qrels message, not the run file's columns
    assert "(TREC qrels file)" in message and "qid iter docid relevance" in message
    assert "rank score tag" not in message and "write the qrels again" in message
    with pytest.raises(TrecFormatError, match=r"\(TREC qrels file\): expected an integer relevance"):
        read_qrels(_write(tmp_path, "q 0 d 1_0\n", "q.tsv"))
    with pytest.raises(TrecFormatError, match=r"\(TREC qrels file\): expected 4 columns"):
        read_qrels(_write(tmp_path, "q 0 d 1 1\n", "q.tsv"))
    with pytest.raises(TrecFormatError, match=r"\(TREC run file\): expected at least one line `qid Q0"):
        read_run(_write(tmp_path, ""))


def test_byte_order_mark_and_crlf(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbf"
    qrels = b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d9 1\n"
    plain = read_qrels(_write(tmp_path, qrels, "plain.tsv"))
    # a BOM must not become part of the first query id (it once gave 3 queries instead of 2)
    assert read_qrels(_write(tmp_path, bom + qrels, "bom.tsv")) == plain
    assert read_qrels(_write(tmp_path, bom + qrels.replace(b"\n", b"\r\n"), "crlf.tsv")) == plain
    assert set(plain) == {"q1", "q2"}
    good = read_run(_write(tmp_path, GOOD))
    assert read_run(_write(tmp_path, bom + GOOD.encode(), "b.trec")) == good
    assert read_run(_write(tmp_path, bom + GOOD.replace("\n", "\r\n").encode(), "c.trec")) == good
    # non-ASCII text goes the line-by-line way: the same there
    uni = GOOD.replace("d9", "dä")
    assert read_run(_write(tmp_path, bom + uni.replace("\n", "\r\n").encode(), "d.trec")) == read_run(
        _write(tmp_path, uni, "e.trec")
    )
    with pytest.raises(TrecFormatError, match="byte-order mark") as exc:
        read_run(_write(tmp_path, bom + bom + GOOD.encode(), "f.trec"))
    assert exc.value.line == 1
    # an invalid byte after a BOM is reported on its real line
    with pytest.raises(TrecFormatError, match="UTF-8") as exc:
        read_qrels(_write(tmp_path, bom + b"q1 0 d1 1\nq1 0 d\xe4 0\n", "g.tsv"))
    assert exc.value.line == 2 and "(TREC qrels file)" in str(exc.value)


def test_error_pickles_with_its_kind() -> None:
    import pickle

    err = TrecFormatError("x.tsv", 3, "something", "fix it", "TREC qrels file")
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err) == "x.tsv:3 (TREC qrels file): expected something. Fix: fix it"


# ---- labels in range, messages with their true cause ---------------------------


@pytest.mark.parametrize("label", [2**62, 2**63 - 1, 2**63, 10**20, -(2**62), -1, 65536])
def test_labels_out_of_range_are_refused_with_file_and_line(tmp_path: Path, label: int) -> None:
    p = _write(tmp_path, f"q1 0 d1 1\nq1 0 d2 {label}\n", "q.tsv")
    with pytest.raises(TrecFormatError) as exc:
        read_qrels(p)
    assert exc.value.line == 2 and exc.value.kind == "TREC qrels file"
    assert f"an integer relevance label 0..65535, found {label}" in str(exc.value)  # as written, not clamped
    assert "Fix: write each relevance label as a whole number 0..65535" in str(exc.value)


def test_the_largest_label_reads_and_equals_pytrec_eval(tmp_path: Path) -> None:
    from analysis.reporting.pytrec_check import compare_with_pytrec_eval

    qrels = read_qrels(_write(tmp_path, "q1 0 d1 65535\nq1 0 d2 0\nq1 0 d3 3\nq2 0 d1 1\n", "q.tsv"))
    assert qrels == {"q1": {"d1": 65535, "d2": 0, "d3": 3}, "q2": {"d1": 1}}
    run = {"q1": [("d3", 3.0), ("d1", 2.0), ("d2", 1.0)], "q2": [("d1", 1.0)]}
    result = compare_with_pytrec_eval(qrels, run)
    assert result.passed and result.max_abs_diff < 1e-12 and 0.5 < result.ours < 1.0


def test_qrels_built_in_memory_meet_the_same_rule() -> None:
    from analysis.stats.metrics import Judgments

    for bad in (2**62, -1, 1.5, 2**70):
        with pytest.raises(ValueError, match=r"query 'q', passage 'd2': expected an integer relevance label"):
            Judgments.from_qrels({"q": {"d1": 1, "d2": bad}})
    assert Judgments.from_qrels({"q": {"d1": 65535, "d2": 0}}).n_relevant.tolist() == [1.0]


def test_beir_qrels_go_through_the_same_reader(tmp_path: Path) -> None:
    beir = _write(
        tmp_path, b"query-id\tcorpus-id\tscore\r\n1\t31715818\t1\r\n1\t14717500\t0\r\n2\t1\t2\r\n", "test.tsv"
    )
    assert read_qrels(beir, layout="beir") == {"1": {"31715818": 1, "14717500": 0}, "2": {"1": 2}}
    assert read_qrels(_write(tmp_path, "1\t4\t1\n", "nohead.tsv"), layout="beir") == {"1": {"4": 1}}
    with pytest.raises(TrecFormatError, match=r"test2\.tsv:3 .*label 0\.\.65535, found 4611686018427387904"):
        read_qrels(
            _write(tmp_path, f"query-id\tcorpus-id\tscore\n1\t4\t1\n1\t5\t{2**62}\n", "test2.tsv"),
            layout="beir",
        )
    with pytest.raises(TrecFormatError, match=r"test3\.tsv:3 .*'4' repeats in '1'"):
        read_qrels(
            _write(tmp_path, "query-id\tcorpus-id\tscore\n1\t4\t1\n1\t4\t0\n", "test3.tsv"), layout="beir"
        )


READERS = ["fast", "reference"]


@pytest.mark.parametrize("reader", READERS)
def test_misleading_messages_give_the_true_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    import gzip

    monkeypatch.setenv("ANALYSIS_TREC_READER", reader)
    gz = _write(tmp_path, gzip.compress(GOOD.encode()), "run.trec.gz")
    with pytest.raises(TrecFormatError, match="gzip-compressed") as exc:
        read_run(gz)
    assert "gunzip" in exc.value.fix and "iconv" not in str(exc.value)
    with pytest.raises(TrecFormatError, match="gzip-compressed"):
        read_qrels(_write(tmp_path, gzip.compress(b"q 0 d 1\n"), "q.tsv.gz"))
    cr = _write(tmp_path, GOOD.replace("\n", "\r").encode(), "cr.trec")
    with pytest.raises(TrecFormatError, match="lone CR") as exc:
        read_run(cr)
    assert exc.value.line == 1 and "tr '\\r' '\\n'" in exc.value.fix
    huge = _write(tmp_path, "q1 Q0 d1 99999999999999999999 3.5 t\nq1 Q0 d2 2 3.0 t\n", "huge.trec")
    with pytest.raises(TrecFormatError) as exc:
        read_run(huge)
    assert exc.value.line == 1  # the line with the huge rank, not the next one
    assert "found rank 99999999999999999999 (rank 1 is missing)" in str(exc.value)
    low = _write(tmp_path, "q1 Q0 d1 -99999999999999999999 3.5 t\n", "low.trec")
    with pytest.raises(TrecFormatError, match="at least 1, found -99999999999999999999"):
        read_run(low)
    with pytest.raises(TrecFormatError) as exc:
        read_run(_write(tmp_path, GOOD), qrels_qids={"q1"})
    assert "allow unknown queries" not in str(exc.value) and "remove the lines of queries" in exc.value.fix
