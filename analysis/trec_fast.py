"""The columnar fast path of the TREC run reader (issue 15: the full report reads 239 MiB of runs).

pyarrow's multi-threaded C++ CSV reader splits the columns and parses the numbers; the rules of
:mod:`analysis.trec` are then checked on whole columns with numpy. This path never raises a format error and
never decides one: whenever anything differs from the plain case it returns None, and the caller runs the
line-by-line reader of :mod:`analysis.trec`, which either reads the file the same way or raises the exact
``file:line`` message. So both paths accept exactly the same files and give the same values (tested on every
error case of the reference reader and on generated studies).

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
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

if TYPE_CHECKING:
    from analysis.qrels import Judgments

__all__ = ["FastRun", "doc_index", "judged_docids", "read_fast"]

_NAMES = ["qid", "q0", "docid", "rank", "score", "tag"]
_READ = pacsv.ReadOptions(column_names=_NAMES, use_threads=True, block_size=1 << 22)
_PARSE = pacsv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False, escape_char=False,
                            newlines_in_values=False, ignore_empty_lines=True)
# the id columns dictionary-encoded while they are converted (issue 34: about a third less than converting
# strings and encoding them afterwards); a file of several blocks has one dictionary per block (_encoded)
_IDS = pa.dictionary(pa.int32(), pa.string())
_CONVERT = pacsv.ConvertOptions(
    column_types={"qid": _IDS, "q0": pa.string(), "docid": _IDS, "rank": pa.int64(),
                  "score": pa.float64(), "tag": pa.string()},
    null_values=[], strings_can_be_null=False, quoted_strings_can_be_null=False,
)
_BOM = b"\xef\xbb\xbf"


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
        return self.doc_names.take(pa.array(self.doc_codes)).to_pylist()  # type: ignore[no-any-return]


def _plain_text(data: bytes) -> bool:
    if not data.isascii():
        return False
    # one-byte searches first (memchr): the two-byte ones only when the byte occurs at all
    if (b"x" in data and b"0x" in data) or (b"X" in data and b"0X" in data):
        return False
    return b"\r" not in data or data.count(b"\r") == data.count(b"\r\n")


def _encoded(col: pa.ChunkedArray) -> pa.DictionaryArray:
    """One dictionary-encoded array of an id column (the blocks of a large file each have their own)."""
    if col.num_chunks == 1:
        return col.chunk(0)
    return col.cast(pa.string()).combine_chunks().dictionary_encode()


def _ids_plain(table: pa.Table) -> bool:
    for name in ("qid", "q0", "docid", "tag"):
        col = table.column(name)
        if pa.types.is_dictionary(col.type):  # every value is in the dictionary: checking it is enough
            col = pa.chunked_array([c.dictionary for c in col.chunks], type=col.type.value_type)
        if len(col) == 0 or pc.min(pc.binary_length(col)).as_py() < 1 \
                or not pc.all(pc.ascii_is_printable(col)).as_py():
            return False
    return True


def read_fast(data: bytes, *, qrels_qids: Collection[str] | None = None,
              allow_unknown_queries: bool = False) -> FastRun | None:
    """The validated run of ``data`` (a run file's bytes), or None: then the reference reader decides."""
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    if not data or not _plain_text(data):
        return None
    try:
        table = pacsv.read_csv(pa.py_buffer(data), read_options=_READ, parse_options=_PARSE,
                               convert_options=_CONVERT)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    n = table.num_rows
    if n == 0 or not _ids_plain(table):
        return None
    scores = table.column("score").to_numpy()
    ranks = table.column("rank").to_numpy()
    if not np.all(np.isfinite(scores)) or ranks.min() < 1:
        return None
    encoded = _encoded(table.column("qid"))
    names: list[str] = encoded.dictionary.to_pylist()
    if qrels_qids is not None and not allow_unknown_queries and not set(qrels_qids).issuperset(names):
        return None
    qids = tuple(sorted(names))
    position = {q: i for i, q in enumerate(qids)}
    remap = np.array([position[q] for q in names], dtype=np.int64)
    qinv = remap[encoded.indices.to_numpy(zero_copy_only=False)]
    order = np.lexsort((ranks, qinv))
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
    codes = docs.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    keys = np.sort(qinv * len(docs.dictionary) + codes)
    if keys.size > 1 and np.any(keys[1:] == keys[:-1]):  # a docid twice in one query
        return None
    in_order = bool(np.all(order[1:] > order[:-1]))
    return FastRun(qids, offsets, docs.dictionary, codes if in_order else codes[order], s_sorted)


def doc_index(run: FastRun, judged_docids: pa.Array) -> np.ndarray:
    """Index of each row's docid in ``judged_docids`` (the order of ``Judgments.doc_index``), -1 if absent."""
    found = pc.index_in(run.doc_names, value_set=judged_docids).fill_null(-1)
    return np.asarray(found.to_numpy(zero_copy_only=False), dtype=np.int64)[run.doc_codes]


_JUDGED: list[tuple[Judgments, pa.Array]] = []  # the last Judgments seen and its docids as an Arrow array


def judged_docids(judgments: Judgments) -> pa.Array:
    """``judgments.doc_index``'s docids in index order, as an Arrow array (built once per Judgments)."""
    if not _JUDGED or _JUDGED[0][0] is not judgments:
        _JUDGED[:] = [(judgments, pa.array(list(judgments.doc_index), type=pa.string()))]
    return _JUDGED[0][1]
