"""The columnar fast path of the TREC run reader (the full report reads 239 MiB of runs).

pyarrow's multi-threaded C++ CSV reader splits the columns and parses the numbers; the rules of
:mod:`analysis.inputs.trec` are then checked on whole columns with numpy. This path never raises a format
error and never decides one: whenever anything differs from the plain case it returns None, and the caller
runs the line-by-line reader of :mod:`analysis.inputs.trec`, which either reads the file the same way or
raises the exact ``file:line`` message. So both paths accept exactly the same files and give the same values
(tested on every error case of the reference reader and on generated studies).

The plain case, where the two tokenisations provably agree: the file (after a UTF-8 byte-order mark) is ASCII;
columns are separated by single spaces, lines end in "\\n" or "\\r\\n" (no lone "\\r"); every id field is
non-empty printable ASCII; no ``0x`` (pyarrow would read a hexadecimal rank, which the reference refuses).
Numbers are parsed by pyarrow (fast_float, correctly rounded, like ``float()`` and numpy); a NaN or an
infinity, a rank below 1, a gap or repeat in the ranks, a score above the score of the rank before, a
repeated docid or an unknown query sends the file to the reference reader.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow._compute as pcf  # call_function without pyarrow.compute's import (0.1 s of a cold report)
import pyarrow.csv as pacsv

if TYPE_CHECKING:
    from analysis.inputs.qrels import Judgments

__all__ = ["FastRun", "doc_index", "judged_docids", "numpy_of", "read_fast", "string_array"]

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
    ignore_empty_lines=True,
)
# qid and docid dictionary-encoded while they are converted (about a third less than converting strings and
# encoding them afterwards); a file of several blocks has one dictionary per block (_encoded). q0 and tag are
# never used (their bytes are checked by _plain_text, their emptiness and the one tag on whole columns): plain
# strings, which convert in less time than a dictionary (full-size study: 13.5 -> 10.5 ms CPU a file)
_IDS = pa.dictionary(pa.int32(), pa.string())
_CONVERT = pacsv.ConvertOptions(
    column_types={
        "qid": _IDS,
        "q0": pa.string(),
        "docid": _IDS,
        "rank": pa.int64(),
        "score": pa.float64(),
        "tag": pa.string(),
    },
    null_values=[],
    strings_can_be_null=False,
    quoted_strings_can_be_null=False,
)
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
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
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


def _plain_text(data: bytes) -> int | None:
    """ASCII, no ``0x``, no 0x7f, every "\\r" in a "\\r\\n": the number of "\\r\\n" line ends, else None. That
    no other byte is below 0x20 (so every field is printable ASCII; empty fields: :func:`_no_empty_ids`) is
    checked once the lines are counted (:func:`_only_line_ends`)."""
    if not data.isascii() or b"\x7f" in data:
        return None
    # one-byte searches first (memchr): the two-byte ones only when the byte occurs at all
    if (b"x" in data and b"0x" in data) or (b"X" in data and b"0X" in data):
        return None
    returns = data.count(b"\r") if b"\r" in data else 0
    if returns and returns != data.count(b"\r\n"):
        return None
    return returns


def _only_line_ends(data: bytes, returns: int, rows: int) -> bool:
    """No byte below 0x20 but the line ends ("\\n", "\\r\\n": ``returns`` of these) of ``data``, which the CSV
    reader read as ``rows`` lines that are not empty (one numpy pass over the bytes).

    Every "\\r" is in a "\\r\\n" (:func:`_plain_text`), so the "\\n"s end the lines: at least ``rows - 1``
    of them, ``rows`` when the file ends in one. The bytes below 0x20 are those "\\n"s and "\\r"s and any
    other: when they number exactly that least count of "\\n"s plus ``returns``, there is no other (an
    empty line, or another byte, makes them more; then the "\\n"s are counted)."""
    codes = np.frombuffer(data, np.uint8)
    controls = int(np.count_nonzero(codes < 0x20)) - returns
    if controls == rows - 1 + data.endswith(b"\n"):
        return True
    return controls == int(np.count_nonzero(codes == 0x0A))


def _offsets(chunk: pa.Array) -> np.ndarray:
    """The int32 offsets of a string array's values (``len(chunk) + 1`` of them), read from its buffers."""
    return np.frombuffer(chunk.buffers()[1], np.int32, count=len(chunk) + 1, offset=4 * chunk.offset)


def _no_empty_ids(table: pa.Table, qids: list[str]) -> bool:
    """No empty qid, Q0, docid or tag field (a space beside another, or at a line's end): looked up in the
    docid column's dictionary, and on the whole Q0 column (``qids``: the qid dictionary's values); the tag:
    :func:`_one_tag`. On the offsets of the strings (numpy; pyarrow.compute's import costs 0.1 s)."""
    if "" in qids:
        return False
    for chunk in table.column("docid").chunks:
        if len(chunk.dictionary) == 0 or np.any(np.diff(_offsets(chunk.dictionary)) < 1):
            return False
    return all(not np.any(np.diff(_offsets(chunk)) < 1) for chunk in table.column("q0").chunks)


def _one_tag(table: pa.Table) -> bool:
    """Every line carries one run tag, and it is not empty (else the reference reader names the line): every
    tag has the first tag's length, and the tags' bytes are the first tag repeated."""
    chunks = table.column("tag").chunks
    first: bytes = chunks[0][0].as_buffer().to_pybytes()
    if not first:
        return False
    for chunk in chunks:
        offsets = _offsets(chunk)
        if np.any(np.diff(offsets) != len(first)):
            return False
        values = chunk.buffers()[2][int(offsets[0]) : int(offsets[-1])]
        if values.to_pybytes() != first * len(chunk):
            return False
    return True


def _encoded(col: pa.ChunkedArray) -> pa.DictionaryArray:
    """One dictionary-encoded array of an id column (the blocks of a large file each have their own)."""
    if col.num_chunks == 1:
        return col.chunk(0)
    return col.cast(pa.string()).combine_chunks().dictionary_encode()


def read_fast(
    data: bytes, *, qrels_qids: Collection[str] | None = None, allow_unknown_queries: bool = False
) -> FastRun | None:
    """The validated run of ``data`` (a run file's bytes), or None: then the reference reader decides."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    returns = _plain_text(data) if data else None
    if returns is None:
        return None
    options = _READ if len(data) > _BLOCK else _READ_ONE_BLOCK
    try:
        table = pacsv.read_csv(
            pa.py_buffer(data), read_options=options, parse_options=_PARSE, convert_options=_CONVERT
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    n = table.num_rows
    if n == 0 or not _only_line_ends(data, returns, n):
        return None
    scores = numpy_of(table.column("score"))
    ranks = numpy_of(table.column("rank"))
    if not np.all(np.isfinite(scores)) or ranks.min() < 1:
        return None
    encoded = _encoded(table.column("qid"))
    names: list[str] = encoded.dictionary.to_pylist()
    if not _no_empty_ids(table, names) or not _one_tag(table):
        return None
    if qrels_qids is not None and not allow_unknown_queries and not set(qrels_qids).issuperset(names):
        return None
    qids = tuple(sorted(names))
    position = {q: i for i, q in enumerate(qids)}
    remap = np.array([position[q] for q in names], dtype=np.int64)
    qinv = remap[numpy_of(encoded.indices)]
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
    docs = _encoded(table.column("docid"))
    codes = numpy_of(docs.indices).astype(np.int64)
    if _repeats(qinv * len(docs.dictionary) + codes):
        return None  # a docid twice in one query
    return FastRun(qids, offsets, docs.dictionary, codes if order is None else codes[order], s_sorted)


def _in_rank_order(qinv: np.ndarray, ranks: np.ndarray) -> bool:
    """Rows already sorted by (query, rank), so that the stable lexsort would leave them where they are."""
    later_q = qinv[1:] > qinv[:-1]
    return bool(np.all(later_q | ((qinv[1:] == qinv[:-1]) & (ranks[1:] >= ranks[:-1]))))


def _repeats(keys: np.ndarray) -> bool:
    """Whether a value occurs twice in ``keys``."""
    ordered = np.sort(keys)
    return bool(ordered.size > 1 and np.any(ordered[1:] == ordered[:-1]))


def doc_index(run: FastRun, judged_docids: pa.Array) -> np.ndarray:
    """Index of each row's docid in ``judged_docids`` (the order of ``Judgments.doc_index``), -1 if absent."""
    found = pcf.call_function("index_in", [run.doc_names], pcf.SetLookupOptions(judged_docids))
    return numpy_of(found, null=-1).astype(np.int64)[run.doc_codes]


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
