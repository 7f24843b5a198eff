"""The columnar fast path of the TREC run reader (the full report reads 239 MiB of runs).

pyarrow's multi-threaded C++ CSV reader splits the columns and parses the numbers; the rules of
:mod:`analysis.inputs.trec` are then checked on whole columns with numpy. This path never raises a format
error and never decides one: whenever anything differs from the plain case it returns None, and the caller
runs the line-by-line reader of :mod:`analysis.inputs.trec`, which either reads the file the same way or
raises the exact ``file:line`` message. So both paths accept exactly the same files and give the same values
(tested on every error case of the reference reader and on generated studies).

The plain case, where the two tokenisations provably agree: the file (after a UTF-8 byte-order mark) is
ASCII; columns are separated by single spaces, lines end in "\\n" or "\\r\\n" (no lone "\\r"); no line is
empty; every id field is non-empty printable ASCII; no ``0x`` (pyarrow would read a hexadecimal rank, which
the reference refuses). Numbers are parsed by pyarrow (fast_float, correctly rounded, like ``float()`` and
numpy); a NaN or an infinity, a rank below 1, a gap or repeat in the ranks, a score above the score of the
rank before, a repeated docid or an unknown query sends the file to the reference reader.

Where that is checked, and why it covers the whole file although only a few byte searches
(:func:`_plain_text`) look at every byte: every byte after the byte-order mark is a separator " ", part of a
line end, or a byte of a field (the CSV reader skips a byte-order mark at its input's start: a file with a
second one goes to the reference reader). ``\\r`` occurs only in ``\\r\\n`` (so pyarrow's line ends are the
reference's) and there is no tab (searched for). An empty line is read by the CSV reader
(``ignore_empty_lines=False``) as a row with an empty rank, which its int64 parser refuses, as it refuses an
empty rank or score anywhere. pyarrow's number parsers trim spaces and tabs around a value and accept nothing
but the characters of a number (digits, ``+-.eE``; the letters of "inf" and "nan", refused later as not
finite; ``0x``, excluded): every byte below 0x20 or above 0x7e in any position of a rank or a score is
refused (tested on all 256 byte values: tests/analysis/test_analysis_trec_fast.py). So such a byte can only
lie in a qid, Q0, docid or tag field, and all of their bytes are checked (:func:`_printable_ids`): the
qids' distinct values (every row's qid is the value its run of equal qids starts with: :func:`_query_codes`),
the docid column's dictionary (it holds every value of the column), the whole Q0 column (two bytes a line),
and the first tag (every tag is the first: :func:`_one_tag`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow._compute as pcf  # call_function without pyarrow.compute's import (0.1 s of a cold report)
import pyarrow.csv as pacsv

if TYPE_CHECKING:
    from analysis.inputs.qrels import Judgments

__all__ = [
    "FastRun",
    "PendingRun",
    "coded_runs",
    "doc_index",
    "judged_docids",
    "names_index",
    "numpy_of",
    "read_fast",
    "read_pending",
    "string_array",
]

_NAMES = ["qid", "q0", "docid", "rank", "score", "tag"]
_BLOCK = 1 << 22
_READ = pacsv.ReadOptions(column_names=_NAMES, use_threads=True, block_size=_BLOCK)
# a file of one block cannot be parsed in parallel: pyarrow's thread pool only adds its hand-offs, and the
# report already reads one file per CPU on its own threads (load 1.5 -> 1.2 s on 2 cores)
_READ_ONE_BLOCK = pacsv.ReadOptions(column_names=_NAMES, use_threads=False, block_size=_BLOCK)
_PARSE = pacsv.ParseOptions(
    delimiter=" ",
    quote_char=False,
    double_quote=False,
    escape_char=False,
    newlines_in_values=False,
    ignore_empty_lines=False,  # an empty line: a row with an empty rank, refused (the module's docstring)
)
# qid and docid dictionary-encoded while they are converted (about a third less than converting strings and
# encoding them afterwards); a file of several blocks has one dictionary per block (_encoded). q0 and tag are
# never used (their bytes, their emptiness and the one tag are checked on whole columns): plain values,
# which convert in less time than a dictionary (full-size study: 13.5 -> 10.5 ms CPU a file). Every column
# binary: pyarrow's UTF-8 check of each string is not needed, since an accepted file is printable ASCII
# (_printable_ids, by the module docstring's argument); the docid dictionary is viewed as strings afterwards
# (_as_strings)
_IDS = pa.dictionary(pa.int32(), pa.binary())


def _convert(docid: pa.DataType) -> pacsv.ConvertOptions:
    return pacsv.ConvertOptions(
        column_types={
            "qid": pa.binary(),  # coded from its runs of equal values (_query_codes): less than a dictionary
            "q0": pa.binary(),
            "docid": docid,
            "rank": pa.int64(),
            "score": pa.float64(),
            "tag": pa.binary(),
        },
        null_values=[],
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )


_CONVERT = _convert(_IDS)
# a run whose docids are looked up in another run's (read_pending, coded_runs): plain docids, not hashed
# into a dictionary of their own (a reranked run's docids are its first stage's)
_CONVERT_PLAIN = _convert(pa.binary())
_BOM = b"\xef\xbb\xbf"
_NUMPY: dict[pa.DataType, np.dtype[Any]] = {
    pa.int32(): np.dtype(np.int32),
    pa.int64(): np.dtype(np.int64),
    pa.float64(): np.dtype(np.float64),
}


def numpy_of(values: pa.Array | pa.ChunkedArray, null: int | None = None) -> np.ndarray:
    """A numeric Arrow column as numpy, read from its buffers: a read-only view when it has no nulls; with
    ``null`` given, a copy where each null is ``null`` (as ``fill_null``).

    pyarrow's own ``to_numpy`` and ``fill_null`` import pandas on their first call in a process (to check for
    pandas' types): 0.5 s of a cold ``analysis report``. The values are the same bits."""
    if isinstance(values, pa.ChunkedArray):  # one chunk (a file of one block): read in place, not copied
        values = values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()
    dtype = _NUMPY.get(values.type)
    if dtype is None or (values.null_count and null is None):
        raise TypeError(f"numpy_of: {values.type} with {values.null_count} nulls and no fill value")
    validity, data = values.buffers()[:2]
    out = np.frombuffer(data, dtype=dtype, count=len(values), offset=values.offset * dtype.itemsize)
    if not values.null_count:
        return out
    bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
    valid = bits[values.offset : values.offset + len(values)].astype(bool)
    filled: np.ndarray = np.where(valid, out, np.array(null).astype(dtype))
    return filled


@dataclass(frozen=True)
class FastRun:
    """A validated run in rank order: queries sorted by qid; query i holds rows offsets[i]:offsets[i + 1].

    Docids are kept encoded: ``doc_names[doc_codes[row]]`` is the docid of a row (rank order)."""

    qids: tuple[str, ...]
    offsets: np.ndarray  # int64
    doc_names: pa.Array  # the distinct docids of the file (string)
    doc_codes: np.ndarray  # int64, rows in rank order
    scores: np.ndarray  # float64, rows in rank order

    def docids(self) -> list[str]:
        names: list[str] = self.doc_names.to_pylist()  # not take(pa.array(...)): that imports pandas
        return [names[c] for c in self.doc_codes.tolist()]


def _plain_text(data: bytes) -> bool:
    """No tab, no ``0x``, every "\\r" in a "\\r\\n" (one-byte searches, memchr; the two-byte ones only when
    the byte occurs at all). Every other byte below 0x20 or above 0x7e: :func:`_printable_ids`, by the
    argument of the module's docstring."""
    if b"\t" in data or (b"x" in data and b"0x" in data) or (b"X" in data and b"0X" in data):
        return False
    return b"\r" not in data or data.count(b"\r") == data.count(b"\r\n")


def _value_bytes(array: pa.Array) -> np.ndarray:
    """The bytes of a binary array's values, all of them and nothing else (uint8, a view)."""
    offsets = _offsets(array)
    return np.frombuffer(array.buffers()[2], np.uint8)[int(offsets[0]) : int(offsets[-1])]


def _printable_ids(table: pa.Table, qids: list[bytes]) -> bool:
    """Printable ASCII (0x20-0x7e) in every qid (``qids``: the distinct ones), Q0 and tag: checked on the
    whole Q0 column and the first tag (every tag is the first: :func:`_one_tag`); the docids:
    :func:`_good_docids`. 0x20 itself never occurs in a field (it separates them)."""
    arrays = [*table.column("q0").chunks, table.column("tag").chunk(0)[:1]]
    codes = [np.frombuffer(b"".join(qids), np.uint8)] + [_value_bytes(a) for a in arrays if len(a)]
    return not any(np.any(c - np.uint8(0x20) > 0x5E) for c in codes)  # below 0x20 wraps around


def _good_docids(dictionaries: list[pa.Array]) -> bool:
    """Every value of the docid column's ``dictionaries`` printable ASCII and not empty (and no dictionary
    empty): :func:`_printable_ids` and :func:`_no_empty_ids` for the docids."""
    if any(len(d) == 0 or np.any(np.diff(_offsets(d)) < 1) for d in dictionaries):
        return False
    return not any(np.any(_value_bytes(d) - np.uint8(0x20) > 0x5E) for d in dictionaries)


def _offsets(chunk: pa.Array) -> np.ndarray:
    """The int32 offsets of a string array's values (``len(chunk) + 1`` of them), read from its buffers."""
    return np.frombuffer(chunk.buffers()[1], np.int32, count=len(chunk) + 1, offset=4 * chunk.offset)


def _no_empty_ids(table: pa.Table, qids: list[str]) -> bool:
    """No empty qid, Q0 or tag field (a space beside another, or at a line's end): on the whole Q0 column
    (``qids``: the distinct qids); the tag: :func:`_one_tag`; the docids: :func:`_good_docids`. On the
    offsets of the strings (numpy; pyarrow.compute's import costs 0.1 s)."""
    if "" in qids:
        return False
    return all(not np.any(np.diff(_offsets(chunk)) < 1) for chunk in table.column("q0").chunks)


def _one_tag(table: pa.Table) -> bool:
    """Every line carries one run tag, and it is not empty (else the reference reader names the line): every
    tag has the first tag's length, and the tags' bytes are the first tag repeated: they start with it and
    each byte equals the byte one tag before it (two comparisons of the buffer, no copy)."""
    chunks = table.column("tag").chunks
    first = chunks[0][0].as_buffer()
    size = first.size
    if not size:
        return False
    for chunk in chunks:
        offsets = _offsets(chunk)
        if np.any(np.diff(offsets) != size):
            return False
        values = chunk.buffers()[2][int(offsets[0]) : int(offsets[-1])]
        if not (values[:size].equals(first) and values[size:].equals(values[: values.size - size])):
            return False
    return True


def _encoded(col: pa.ChunkedArray) -> pa.DictionaryArray:
    """One dictionary-encoded array of an id column (the blocks of a large file each have their own)."""
    if col.num_chunks == 1:
        return col.chunk(0)
    return col.cast(pa.binary()).combine_chunks().dictionary_encode()


def _as_strings(values: pa.Array) -> pa.Array:
    """A binary array of ASCII values (checked by :func:`_printable_ids`) as the string array of the same
    buffers (no copy, no UTF-8 check: ASCII is UTF-8)."""
    return pa.Array.from_buffers(pa.string(), len(values), values.buffers(), offset=values.offset)


@dataclass(frozen=True)
class PendingRun:
    """A run read and validated but for its docids (:func:`read_pending`), which :func:`coded_runs` codes."""

    qids: tuple[str, ...]
    offsets: np.ndarray  # int64
    qinv: np.ndarray  # int64, each row's query (file order)
    order: np.ndarray | None  # the rows in rank order (None: the file's order is the rank order)
    scores: np.ndarray  # float64, rows in rank order
    docids: pa.ChunkedArray  # the docid column (file order)


def read_fast(
    data: bytes, *, qrels_qids: Collection[str] | None = None, allow_unknown_queries: bool = False
) -> FastRun | None:
    """The validated run of ``data`` (a run file's bytes), or None: then the reference reader decides."""
    read = _read_table(data, _CONVERT, qrels_qids, allow_unknown_queries)
    if read is None or not _good_docids([c.dictionary for c in read.docids.chunks]):
        return None
    return _coded(read, _encoded(read.docids))


def read_pending(
    data: bytes, *, qrels_qids: Collection[str] | None = None, allow_unknown_queries: bool = False
) -> PendingRun | None:
    """:func:`read_fast` up to the docids, read as plain values: their checks and codes come from
    :func:`coded_runs` (a reranked run's docids are its first stage's, whose dictionary is hashed once for
    all its runs, instead of a dictionary hashed for each run). None: the reference reader decides."""
    return _read_table(data, _CONVERT_PLAIN, qrels_qids, allow_unknown_queries)


def coded_runs(runs: Sequence[PendingRun], names: pa.Array | None) -> list[FastRun | None]:
    """Each of ``runs`` as :func:`read_fast` reads it (None: the reference reader decides), its docids
    coded in ``names`` (a :class:`FastRun`'s ``doc_names``: printable and none empty) where each of them is
    one of ``names``, by one lookup for all the runs (pyarrow hashes ``names`` once): every docid is then
    one of ``names`` (so printable and not empty, the module docstring's argument). A run that holds another
    docid is coded in a dictionary of its own and checked as :func:`read_fast` checks it, as is every run
    where ``names`` is None or not all printable and non-empty."""
    if not runs:
        return []
    value_set = None
    if names is not None:
        value_set = pa.Array.from_buffers(pa.binary(), len(names), names.buffers(), offset=names.offset)
    if names is None or value_set is None or not _good_docids([value_set]):  # e.g. the reference reader's
        return [_own_codes(run) for run in runs]
    rows = pa.chunked_array([c for r in runs for c in r.docids.chunks], type=pa.binary())
    found = pcf.call_function("index_in", [rows], pcf.SetLookupOptions(value_set))
    flat = numpy_of(found, null=-1).astype(np.int64)
    out: list[FastRun | None] = []
    for run, codes in zip(runs, np.split(flat, np.cumsum([len(r.docids) for r in runs])[:-1]), strict=True):
        if codes.size and codes.min() < 0:  # an id its first stage lacks (a reordering break, or worse)
            out.append(_own_codes(run))
        elif _repeats(run.qinv, codes, len(names)):
            out.append(None)
        else:
            rank_codes = codes if run.order is None else codes[run.order]
            out.append(FastRun(run.qids, run.offsets, names, rank_codes, run.scores))
    return out


def _own_codes(run: PendingRun) -> FastRun | None:
    """``run``, its docids coded in a dictionary of their own and checked as :func:`read_fast` checks them."""
    docs = pcf.call_function("dictionary_encode", [run.docids.combine_chunks()])
    return _coded(run, docs) if _good_docids([docs.dictionary]) else None


def _coded(run: PendingRun, docs: pa.DictionaryArray) -> FastRun | None:
    """``run`` with its docids ``docs`` (checked printable and not empty), or None if one repeats in a
    query."""
    codes = numpy_of(docs.indices).astype(np.int64)
    if _repeats(run.qinv, codes, len(docs.dictionary)):
        return None  # a docid twice in one query
    rank_codes = codes if run.order is None else codes[run.order]
    return FastRun(run.qids, run.offsets, _as_strings(docs.dictionary), rank_codes, run.scores)


def _read_table(
    data: bytes, convert: pacsv.ConvertOptions, qrels_qids: Collection[str] | None, allow_unknown: bool
) -> PendingRun | None:
    """The table of ``data`` and every check but the docids' (:func:`_good_docids`, :func:`_repeats`)."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    if not data or data.startswith(_BOM) or not _plain_text(data):  # pyarrow would skip a second mark
        return None
    options = _READ if len(data) > _BLOCK else _READ_ONE_BLOCK
    try:
        table = pacsv.read_csv(
            pa.py_buffer(data), read_options=options, parse_options=_PARSE, convert_options=convert
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    n = table.num_rows
    if n == 0:
        return None
    scores = numpy_of(table.column("score"))
    ranks = numpy_of(table.column("rank"))
    if not np.all(np.isfinite(scores)) or ranks.min() < 1:
        return None
    values, query_codes = _query_codes(table.column("qid"))
    if not _printable_ids(table, values):  # the docids: _good_docids
        return None
    names = [q.decode("ascii") for q in values]
    if not _no_empty_ids(table, names) or not _one_tag(table):
        return None
    if qrels_qids is not None and not allow_unknown and not set(qrels_qids).issuperset(names):
        return None
    qids = tuple(sorted(names))
    position = {q: i for i, q in enumerate(qids)}
    remap = np.array([position[q] for q in names], dtype=np.int64)
    qinv = remap[query_codes]
    order = None if _in_rank_order(qinv, ranks) else np.lexsort((ranks, qinv))
    if order is None:  # the usual file, written in (query, rank) order: lexsort would return 0..n-1
        q_sorted, r_sorted, s_sorted = qinv, ranks, scores
    else:
        q_sorted, r_sorted, s_sorted = qinv[order], ranks[order], scores[order]
    counts = np.bincount(q_sorted, minlength=len(qids))
    offsets = np.zeros(len(qids) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    expected = np.arange(n, dtype=np.int64) - np.repeat(offsets[:-1], counts) + 1
    if not np.array_equal(r_sorted, expected):  # ranks 1..n per query
        return None
    same_q = q_sorted[1:] == q_sorted[:-1]
    if np.any(same_q & (s_sorted[1:] > s_sorted[:-1])):  # scores never rise with rank
        return None
    return PendingRun(qids, offsets, qinv, order, s_sorted, table.column("docid"))


_MAX_RUNS = 1 << 12  # more runs of equal qids (a shuffled file): pyarrow's hash encoding is the quicker


def _query_codes(col: pa.ChunkedArray) -> tuple[list[bytes], np.ndarray]:
    """The distinct qids (bytes) and each row's index among them (int64), from the column's runs of equal
    values: a file written query by query has one run per query, so only the runs' first values are read
    (pyarrow compares each value with the one before; no hash of every row)."""
    values = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    n = len(values)
    if n > 1:
        changed = pcf.call_function("not_equal", [values[1:], values[:-1]])
        bits = np.unpackbits(np.frombuffer(changed.buffers()[1], np.uint8), bitorder="little")
        starts = np.flatnonzero(np.r_[True, bits[changed.offset : changed.offset + n - 1].astype(bool)])
    else:
        starts = np.zeros(n, dtype=np.int64)
    if starts.size > _MAX_RUNS:
        encoded = values.dictionary_encode()
        return encoded.dictionary.to_pylist(), numpy_of(encoded.indices).astype(np.int64)
    at = pa.Array.from_buffers(pa.int64(), starts.size, [None, pa.py_buffer(starts.astype(np.int64))])
    firsts: list[bytes] = pcf.call_function("take", [values, at]).to_pylist()
    index = dict.fromkeys(firsts)
    if len(index) == len(firsts):  # one run per query
        run_codes = np.arange(len(firsts), dtype=np.int64)
    else:
        position = {q: i for i, q in enumerate(index)}
        run_codes = np.fromiter(map(position.__getitem__, firsts), np.int64, count=len(firsts))
    return list(index), np.repeat(run_codes, np.diff(np.r_[starts, n]))


def _in_rank_order(qinv: np.ndarray, ranks: np.ndarray) -> bool:
    """Rows already sorted by (query, rank), so that the stable lexsort would leave them where they are."""
    later_q = qinv[1:] > qinv[:-1]
    return bool(np.all(later_q | ((qinv[1:] == qinv[:-1]) & (ranks[1:] >= ranks[:-1]))))


def _repeats(qinv: np.ndarray, codes: np.ndarray, n_codes: int) -> bool:
    """Whether a (query, code) pair occurs twice: looked for among the rows of a code that occurs more than
    once in the file (a few of a run's docids are candidates of several queries)."""
    several = np.bincount(codes, minlength=n_codes)[codes] > 1
    if not several.any():
        return False
    keys = qinv[several] * n_codes + codes[several]
    ordered = np.sort(keys)
    return bool(ordered.size > 1 and np.any(ordered[1:] == ordered[:-1]))


def doc_index(run: FastRun, judged_docids: pa.Array) -> np.ndarray:
    """Index of each row's docid in ``judged_docids`` (the order of ``Judgments.doc_index``), -1 if absent."""
    return names_index(run.doc_names, judged_docids)[run.doc_codes]


def names_index(names: pa.Array, judged_docids: pa.Array) -> np.ndarray:
    """Index of each of ``names`` in ``judged_docids``, -1 if absent (:func:`doc_index` of every run whose
    ``doc_names`` are ``names``)."""
    found = pcf.call_function("index_in", [names], pcf.SetLookupOptions(judged_docids))
    return numpy_of(found, null=-1).astype(np.int64)


_JUDGED: list[tuple[Judgments, pa.Array]] = []  # the last Judgments seen and its docids as an Arrow array


def judged_docids(judgments: Judgments) -> pa.Array:
    """``judgments.doc_index``'s docids in index order, as an Arrow array (built once per Judgments)."""
    if not _JUDGED or _JUDGED[0][0] is not judgments:
        _JUDGED[:] = [(judgments, string_array(list(judgments.doc_index)))]
    return _JUDGED[0][1]


_LINES = pacsv.ParseOptions(
    delimiter="\t",
    quote_char=False,
    double_quote=False,
    escape_char=False,
    newlines_in_values=False,
    ignore_empty_lines=False,
)


def string_array(values: list[str]) -> pa.Array:
    """``values`` as an Arrow string array, built by the CSV reader from one value per line.

    ``pa.array`` on Python objects makes pyarrow import pandas to check for its types: 0.5 s of a cold report.
    Every value here is a qrels docid (split on whitespace: never empty, no tab, no line break);
    a line break would change the row count, which is checked, and a tab is refused by the CSV reader."""
    if not values:
        return pa.array([], type=pa.string())
    data = ("\n".join(values) + "\n").encode("utf-8")
    convert = pacsv.ConvertOptions(column_types={"v": pa.string()}, null_values=[], strings_can_be_null=False)
    table = pacsv.read_csv(
        pa.py_buffer(data),
        read_options=pacsv.ReadOptions(column_names=["v"]),
        parse_options=_LINES,
        convert_options=convert,
    )
    column = table.column("v").combine_chunks()
    if len(column) != len(values):  # a value with a line break would show here
        raise ValueError(f"string_array: {len(values)} values became {len(column)} rows")
    return column
