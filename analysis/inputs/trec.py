"""Read, validate and write TREC qrels and run files (plan sections "Quality" and "Reproducibility").

Run files have six whitespace-separated columns ``qid Q0 docid rank score tag``; qrels have four
``qid iter docid relevance``. Column 2 of both is ignored, as trec_eval ignores it. Every violation raises
:class:`TrecFormatError` naming the file, the line, what was expected and how to fix it.

Run validation (what "valid" means here, precisely):

* the file is UTF-8 (a leading UTF-8 byte-order mark is stripped; CRLF line ends are accepted), not empty,
  and every non-blank line has exactly six columns;
* ``rank`` is a plain decimal integer, ``score`` a finite plain decimal float (``nan``, ``inf``, hexadecimal,
  digit separators such as ``1_000`` and non-ASCII digits are refused);
* a docid appears at most once per query, and the ranks of a query are exactly 1..n (none negative, zero,
  repeated or skipped);
* ranks agree with scores: within a query, a line with a larger rank number never has a larger score than a
  line with a smaller rank number (equal scores are allowed; their order is the rank order as written);
* queries absent from the qrels are an error unless ``allow_unknown_queries``.

The order of lines in the file does not matter: rows are grouped by query and ordered by rank, so shuffling
the lines gives the same run (tested). The common all-ASCII case is parsed with numpy; a problem found there
is located line by line for the message.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from analysis.core.atomic import write_bytes_atomic
from analysis.inputs.columns import split_columns, stray_character, unicode_space
from analysis.inputs.qrels import LABEL_FIX, LABEL_RULE, labels_out_of_range
from analysis.inputs.textcheck import cut

if TYPE_CHECKING:
    from analysis.inputs.trec_fast import FastRun

__all__ = [
    "RunTable",
    "TrecFormatError",
    "UnknownQueryError",
    "read_qrels",
    "read_run",
    "read_run_table",
    "write_run",
]

RUN_COLUMNS = "qid Q0 docid rank score tag"
QRELS_COLUMNS = "qid iter docid relevance"
BEIR_QRELS_COLUMNS = "query-id corpus-id score"
RUN_KIND = "TREC run file"
QRELS_KIND = "TREC qrels file"
BOM = b"\xef\xbb\xbf"  # UTF-8 byte-order mark: stripped by every reader here (it is not part of a query id)
GZIP_MAGIC = b"\x1f\x8b"  # the first two bytes of every gzip file (RFC 1952)
BEIR_HEADER = ("query-id", "corpus-id")  # the first line of a BEIR qrels/*.tsv
_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = np.iinfo(np.int64)
_LONG_INT = re.compile(r"[^ ]{19}")  # a token of 19 characters or more (int64 holds 18 digits safely)
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class TrecFormatError(ValueError):
    """A malformed TREC file; the message names the file, its kind, the line, what was expected, the fix."""

    def __init__(
        self, path: Path | str, line: int | None, expected: str, fix: str, kind: str = RUN_KIND
    ) -> None:
        self.path = str(path)
        self.line = line
        self.expected = expected
        self.fix = fix
        self.kind = kind
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where} ({kind}): expected {expected}. Fix: {fix}")

    def __reduce__(self) -> tuple[type, tuple[str, int | None, str, str, str]]:  # picklable across processes
        return (type(self), (self.path, self.line, self.expected, self.fix, self.kind))

    def with_fix(self, fix: str) -> TrecFormatError:
        """The same error with another fix (a command that has an option the reader cannot know of)."""
        return type(self)(self.path, self.line, self.expected, fix, self.kind)


class UnknownQueryError(TrecFormatError):
    """A run query that is not in the qrels (a command with an option to allow it names that option)."""

    FIX = "use the run of the qrels' query set, or remove the lines of queries that are not in the qrels"


@dataclass(frozen=True)
class RunTable:
    """A validated run as arrays: queries sorted by qid, rows of a query in rank order.

    Rows of query ``qids[i]`` are ``offsets[i]:offsets[i + 1]`` of ``docids`` and ``scores``.
    """

    qids: tuple[str, ...]
    offsets: np.ndarray  # int64, len(qids) + 1
    docids: tuple[str, ...]
    scores: np.ndarray  # float64
    sha256: str | None = None  # of the file it was read from (hashed from the same bytes); None in memory

    def as_dict(self) -> dict[str, list[tuple[str, float]]]:
        out: dict[str, list[tuple[str, float]]] = {}
        scores = self.scores.tolist()
        for i, q in enumerate(self.qids):
            a, b = int(self.offsets[i]), int(self.offsets[i + 1])
            out[q] = list(zip(self.docids[a:b], scores[a:b], strict=True))
        return out


def _read_text(path: Path, file_kind: str) -> str:
    return _decode(path, path.read_bytes(), file_kind)


def _decode(path: Path, data: bytes, file_kind: str) -> str:
    """UTF-8 text without a leading byte-order mark (a BOM would become part of the first query id)."""
    if data.startswith(GZIP_MAGIC):
        raise TrecFormatError(
            path,
            None,
            "plain text, found a gzip-compressed file (it starts with the gzip bytes 1f 8b)",
            f"gunzip it (`gunzip -k {path}`) and pass the uncompressed file",
            file_kind,
        )
    start = len(BOM) if data.startswith(BOM) else 0
    try:
        text = data[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: start + exc.start].count(b"\n") + 1
        raise TrecFormatError(
            path, line, "UTF-8 text", "re-encode the file as UTF-8 (e.g. `iconv -t UTF-8`)", file_kind
        ) from exc
    stray = stray_character(text)
    if stray is not None:
        line, what = stray
        if "byte-order" in what:
            fix = f"remove it (e.g. `sed -i 's/\\xEF\\xBB\\xBF//g' {path}`) and check the lines around it"
        else:
            fix = "write the file again; ids and numbers are printable text"
        raise TrecFormatError(path, line, f"plain text, found {what}", fix, file_kind)
    return text


def _require_rows(path: Path, tokens: list[str], columns: str, file_kind: str) -> None:
    if not tokens:
        what = "run" if file_kind == RUN_KIND else "qrels"
        raise TrecFormatError(
            path,
            None,
            f"at least one line `{columns}` (the file is empty)",
            f"write the {what} again; an empty {what} file is never valid",
            file_kind,
        )


_OTHER_SEPARATORS = ("\t", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f")


def _space_separated(text: str) -> bool:
    """True for ASCII text whose only separators are " " and "\n". Then a line has at most (spaces + 1)
    columns, so "every line has ncols - 1 spaces" and "ncols * lines tokens in all" together mean that every
    line has exactly ncols columns."""
    return text.isascii() and not any(sep in text for sep in _OTHER_SEPARATORS)


def _rows(path: Path, text: str, ncols: int, columns: str, file_kind: str) -> tuple[list[str], np.ndarray]:
    """All tokens (row-major) and the 1-based line number of each row; checks column counts."""
    if not text:
        return [], np.zeros(0, dtype=np.int64)
    if _space_separated(text):
        lines_list = text.split("\n")
        if lines_list[-1] == "":
            lines_list.pop()
        spaces = np.fromiter(
            map(str.count, lines_list, itertools.repeat(" ")), dtype=np.int64, count=len(lines_list)
        )
        if not np.any(spaces != ncols - 1):
            tokens = text.split()
            if len(tokens) == ncols * len(lines_list):
                return tokens, np.arange(1, len(lines_list) + 1, dtype=np.int64)
    if text.isascii():
        raw = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
        ws = raw <= 32  # ASCII control characters and space separate columns
        prev_ws = np.empty_like(ws)
        prev_ws[0] = True
        prev_ws[1:] = ws[:-1]
        starts = np.flatnonzero(~ws & prev_ws)
        line_of_token = np.searchsorted(np.flatnonzero(raw == 10), starts, side="left")
        counts = np.bincount(line_of_token)
        tokens = text.split()
        if len(tokens) == len(starts):
            bad = np.flatnonzero((counts != 0) & (counts != ncols))
            if bad.size == 0:
                return tokens, np.flatnonzero(counts) + 1
    # Non-ASCII text (or unusual separators): line by line, same rules.
    tokens = []
    lines: list[int] = []
    for number, line in enumerate(text.split("\n"), start=1):
        parts = split_columns(line)  # analysis.inputs.columns: the bytes trec_eval separates by
        if not parts:
            continue
        if len(parts) != ncols:
            if "\r" in (line[:-1] if line.endswith("\r") else line):
                raise TrecFormatError(
                    path,
                    number,
                    f"{ncols} columns `{columns}` per line, found "
                    f"{len(parts)} "
                    "on one line: the file ends its lines with a lone CR (carriage return, "
                    "old Mac line ends), which is not a line end here",
                    f"convert the line ends to LF, e.g. `tr '\\r' '\\n' < {path} > "
                    f"{path}.lf` (or `mac2unix {path}`)",
                    file_kind,
                )
            raise TrecFormatError(
                path,
                number,
                f"{ncols} columns `{columns}`, found {len(parts)}{unicode_space(line) or ''}",
                "separate columns by ASCII spaces or tabs; ids must not contain spaces",
                file_kind,
            )
        tokens.extend(parts)
        lines.append(number)
    return tokens, np.asarray(lines, dtype=np.int64)


def _parse_numbers(
    path: Path, values: list[str], lines: np.ndarray, kind: type, what: str, file_kind: str
) -> np.ndarray:
    """``values`` as int64 or float64. Only plain decimal numbers are accepted (``_INT`` / ``_FLOAT``, and
    ``nan``/``inf`` for floats, refused later as not finite): Python's ``int()`` and ``float()`` would also
    take ``1_000`` and non-ASCII digits, which no TREC tool writes."""
    dtype = np.int64 if kind is int else np.float64
    pattern = _INT if kind is int else _FLOAT
    arr: np.ndarray | None = None
    long_ints = False
    if values:
        joined = " ".join(values)
        long_ints = kind is int and _LONG_INT.search(joined) is not None
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy warns when it stops before the end: then parse slowly
            try:
                arr = np.fromstring(joined, dtype=dtype, sep=" ")
            except (ValueError, DeprecationWarning):
                arr = None
        if arr is not None and arr.size != len(values):
            arr = None
    if arr is None:
        kind_word = "an integer" if kind is int else "a decimal number such as 0.25 or 1e-05"
        parsed = []
        for v, line in zip(values, lines.tolist(), strict=True):
            special = kind is float and v.lower().lstrip("+-") in ("nan", "inf", "infinity")
            if not (special or pattern.fullmatch(v)):
                raise TrecFormatError(
                    path,
                    line,
                    f"{what}, found {cut(v)}",
                    f"write the {what.split()[-1]} as {kind_word}",
                    file_kind,
                )
            parsed.append(min(max(int(v), _INT64.min), _INT64.max) if kind is int else float(v))
        arr = np.array(parsed, dtype=dtype)
    if long_ints:
        # numpy does not say when an integer overflows int64 (20 nines become 2^63 - 1, minus 20 nines even
        # a positive number): a token of 19 characters or more is read again exactly and held clamped, and
        # the checks after this quote the token itself
        long = np.flatnonzero(np.fromiter(map(len, values), dtype=np.int64, count=len(values)) > 18)
        for i in long.tolist():
            arr[i] = min(max(int(values[i]), _INT64.min), _INT64.max)
    if kind is float:
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            i = int(bad[0])
            raise TrecFormatError(
                path,
                int(lines[i]),
                f"{what}, found {cut(values[i])}",
                "every score must be a finite number; drop or re-score the passage",
                file_kind,
            )
    return arr


def _check_ranks(
    path: Path,
    ranks: np.ndarray,
    rank_tokens: Sequence[str],
    lines: np.ndarray,
    qinv: np.ndarray,
    order: np.ndarray,
    q_sorted: np.ndarray,
    r_sorted: np.ndarray,
    qids: Sequence[str],
) -> None:
    """The ranks of each query are exactly 1..n: none below 1, none above n, none repeated, none skipped.

    ``qinv`` is the query index of each row; ``order`` sorts the rows by (query, rank); ``q_sorted`` and
    ``r_sorted`` are the sorted columns. A rank out of 1..n is named on its own line, as written (a rank
    beyond int64 is held clamped, so the number is quoted from the file)."""
    low = np.flatnonzero(ranks < 1)
    if low.size:
        i = int(low[0])
        raise TrecFormatError(
            path,
            int(lines[i]),
            f"a rank of at least 1, found {rank_tokens[i]}",
            "number the passages of a query 1..n",
        )
    per_query = np.bincount(qinv, minlength=len(qids))
    high = np.flatnonzero(ranks > per_query[qinv])
    if high.size:
        i = int(high[0])
        n = int(per_query[qinv[i]])
        present = set(ranks[qinv == qinv[i]].tolist())
        missing = min(r for r in range(1, n + 1) if r not in present)  # n rows, one rank > n: one is missing
        raise TrecFormatError(
            path,
            int(lines[i]),
            f"ranks 1..{n} in query {cut(qids[int(qinv[i])])} ({n} "
            f"passage{'s' if n != 1 else ''}), found rank {rank_tokens[i]} (rank {missing} "
            "is missing)",
            "number the passages of a query 1..n without gaps",
        )
    starts = np.flatnonzero(np.r_[True, q_sorted[1:] != q_sorted[:-1]]) if q_sorted.size else q_sorted
    expected = np.arange(r_sorted.size) - np.repeat(starts, np.diff(np.r_[starts, r_sorted.size])) + 1
    off = np.flatnonzero(r_sorted != expected)
    if off.size == 0:
        return
    k = int(off[0])
    i = int(order[k])
    query = qids[int(q_sorted[k])]
    if k > 0 and q_sorted[k - 1] == q_sorted[k] and r_sorted[k - 1] == r_sorted[k]:
        raise TrecFormatError(
            path,
            int(lines[i]),
            f"each rank once per query, rank {int(ranks[i])} repeats in query {cut(query)}",
            "number the passages of a query 1..n",
        )
    raise TrecFormatError(
        path,
        int(lines[i]),
        f"ranks 1..n in query {cut(query)}, found rank "
        f"{int(ranks[i])} "
        f"where rank {int(expected[k])} belongs (rank {int(expected[k])} is missing)",
        "number the passages of a query 1..n without gaps",
    )


def read_run_table(
    path: Path | str, *, qrels_qids: Collection[str] | None = None, allow_unknown_queries: bool = False
) -> RunTable:
    """Read and validate a TREC run file into a :class:`RunTable` (see the module docstring).

    The columnar reader (:mod:`analysis.inputs.trec_fast`) reads the plain case; anything else, and every
    error, goes through the line-by-line reference reader below (``ANALYSIS_TREC_READER=reference`` forces
    it)."""
    path = Path(path)
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    fast = read_fast_or_none(data, qrels_qids=qrels_qids, allow_unknown_queries=allow_unknown_queries)
    if fast is not None:
        return RunTable(fast.qids, fast.offsets, tuple(fast.docids()), fast.scores, sha256=digest)
    return reference_table(
        path, data, digest, qrels_qids=qrels_qids, allow_unknown_queries=allow_unknown_queries
    )


def fast_reader_enabled() -> bool:
    """False when ``ANALYSIS_TREC_READER=reference`` (tests and the benchmark compare both readers)."""
    return os.environ.get("ANALYSIS_TREC_READER", "fast") != "reference"


def read_fast_or_none(
    data: bytes, *, qrels_qids: Collection[str] | None, allow_unknown_queries: bool
) -> FastRun | None:
    """The columnar reader's validated run, or None when the reference reader must decide."""
    if not fast_reader_enabled():
        return None
    try:
        from analysis.inputs.trec_fast import read_fast  # pyarrow (heavy): only when the fast reader is on
    except ImportError:  # pragma: no cover - pyarrow is a dependency of the analysis package
        return None
    return read_fast(data, qrels_qids=qrels_qids, allow_unknown_queries=allow_unknown_queries)


def _check_one_tag(path: Path, tags: list[str], lines: np.ndarray) -> None:
    """A run file holds one run: every line carries the run tag of its first line (trec_eval keeps only the
    last line's tag, so a file of two runs would be scored as one under the other's name)."""
    first = tags[0]
    if tags.count(first) != len(tags):
        i = next(i for i, tag in enumerate(tags) if tag != first)
        raise TrecFormatError(
            path,
            int(lines[i]),
            f"the run tag {cut(first)} of line {int(lines[0])} on every line, found {cut(tags[i])}",
            "a file holds one run: split the file by run tag, or write one tag on every line",
        )


def reference_table(
    path: Path,
    data: bytes,
    digest: str,
    *,
    qrels_qids: Collection[str] | None = None,
    allow_unknown_queries: bool = False,
) -> RunTable:
    """The line-by-line reference reader: validates ``data`` (the bytes of ``path``) and raises
    :class:`TrecFormatError` with the file, line, expectation and fix on the first violation."""
    text = _decode(path, data, RUN_KIND)
    del data
    tokens, lines = _rows(path, text, 6, RUN_COLUMNS, RUN_KIND)
    _require_rows(path, tokens, RUN_COLUMNS, RUN_KIND)
    _check_one_tag(path, tokens[5::6], lines)
    qtok, dtok = tokens[0::6], tokens[2::6]
    ranks = _parse_numbers(path, tokens[3::6], lines, int, "an integer rank", RUN_KIND)
    scores = _parse_numbers(path, tokens[4::6], lines, float, "a finite float score", RUN_KIND)
    qids_t = tuple(sorted(set(qtok)))
    position = {q: i for i, q in enumerate(qids_t)}
    qinv = np.fromiter(map(position.__getitem__, qtok), dtype=np.int64, count=len(qtok))
    if qrels_qids is not None and not allow_unknown_queries:
        known = set(qrels_qids)
        if not known.issuperset(qids_t):
            for q, line in zip(qtok, lines.tolist(), strict=True):
                if q not in known:
                    raise UnknownQueryError(
                        path, line, f"a query id of the qrels, found {cut(q)}", UnknownQueryError.FIX
                    )
    order = np.lexsort((ranks, qinv))
    q_sorted, r_sorted, s_sorted = qinv[order], ranks[order], scores[order]
    _check_ranks(path, ranks, tokens[3::6], lines, qinv, order, q_sorted, r_sorted, qids_t)
    same_q = q_sorted[1:] == q_sorted[:-1]
    worse = np.flatnonzero(same_q & (s_sorted[1:] > s_sorted[:-1]))
    if worse.size:
        i, j = int(order[worse[0]]), int(order[worse[0] + 1])
        raise TrecFormatError(
            path,
            int(lines[j]),
            f"scores that do not increase with rank; rank {ranks[j]} has score {tokens[6 * j + 4]} "
            f"above rank {ranks[i]} (line {int(lines[i])}) with score {tokens[6 * i + 4]}",
            "write ranks in descending score order (analysis.stats.ranking.rank_by_score)",
        )
    offsets = np.zeros(len(qids_t) + 1, dtype=np.int64)
    np.cumsum(np.bincount(qinv, minlength=len(qids_t)), out=offsets[1:])
    in_order = bool(np.all(order[1:] > order[:-1]))
    docids = tuple(dtok) if in_order else tuple(dtok[i] for i in order.tolist())
    bounds = offsets.tolist()
    for qi, (a, b) in enumerate(itertools.pairwise(bounds)):
        if len(set(docids[a:b])) != b - a:
            seen: set[str] = set()
            for row in order[a:b].tolist():
                if dtok[row] in seen:
                    raise TrecFormatError(
                        path,
                        int(lines[row]),
                        f"each docid once per query, {cut(dtok[row])} repeats in query {cut(qids_t[qi])}",
                        "remove the duplicate line",
                    )
                seen.add(dtok[row])
    return RunTable(qids_t, offsets, docids, s_sorted, sha256=digest)


def read_run(
    path: Path | str, *, qrels_qids: Collection[str] | None = None, allow_unknown_queries: bool = False
) -> dict[str, list[tuple[str, float]]]:
    """qid -> [(docid, score)] in rank order; validated (see the module docstring)."""
    return read_run_table(path, qrels_qids=qrels_qids, allow_unknown_queries=allow_unknown_queries).as_dict()


def read_qrels(path: Path | str, *, layout: str = "trec") -> dict[str, dict[str, int]]:
    """qid -> docid -> relevance label; the one qrels reader (every command reads qrels here).

    ``layout="trec"``: four columns ``qid iter docid relevance``. ``layout="beir"``: BEIR's
    ``qrels/<split>.tsv``, three columns ``query-id corpus-id score`` under an optional header line. Labels
    are integers ``MIN_LABEL..MAX_LABEL`` (:mod:`analysis.inputs.qrels`: what trec_eval and pytrec_eval read
    without crashing, and one meaning for each); relevant means > 0. A label out of range, a duplicate
    judgment or a malformed line is refused with the file, line and fix before any library sees the qrels."""
    if layout not in ("trec", "beir"):
        raise ValueError(f"qrels layout {layout!r}: expected 'trec' or 'beir'")
    path = Path(path)
    text = _read_text(path, QRELS_KIND)
    ncols, columns, label_col = (4, QRELS_COLUMNS, 3) if layout == "trec" else (3, BEIR_QRELS_COLUMNS, 2)
    if layout == "beir" and text.split(None, 2)[:2] == list(BEIR_HEADER):
        end = text.find("\n")
        text = "" if end < 0 else text[end:]  # the header line left blank: line numbers stay the file's
    tokens, lines = _rows(path, text, ncols, columns, QRELS_KIND)
    _require_rows(path, tokens, columns, QRELS_KIND)
    label_tokens = tokens[label_col::ncols]
    labels = _parse_numbers(path, label_tokens, lines, int, "an integer relevance", QRELS_KIND)
    bad = labels_out_of_range(labels)
    if bad.size:
        i = int(bad[0])
        raise TrecFormatError(
            path, int(lines[i]), f"{LABEL_RULE}, found {label_tokens[i]}", LABEL_FIX, QRELS_KIND
        )
    out: dict[str, dict[str, int]] = {}
    docs = tokens[1::3] if layout == "beir" else tokens[2::4]
    for q, d, rel, line in zip(tokens[0::ncols], docs, labels.tolist(), lines.tolist(), strict=True):
        judged = out.setdefault(q, {})
        if d in judged:
            raise TrecFormatError(
                path,
                line,
                f"one judgment per (query, docid); {cut(d)} repeats in {cut(q)}",
                "remove the duplicate judgment",
                QRELS_KIND,
            )
        judged[d] = rel
    return out


def write_run(path: Path | str, run: Mapping[str, Sequence[tuple[str, float]]], tag: str) -> None:
    """Write ``run`` in the given rank order (ranks 1..n), scores as ``repr(float)``, atomically.

    Queries are written in sorted qid order. The file is written to a temporary file in the same folder,
    fsynced and renamed, so a reader never sees a half-written run.
    """
    path = Path(path)
    if not tag or any(c.isspace() for c in tag):
        raise ValueError(f"run tag must be non-empty without whitespace, got {tag!r}")
    parts: list[str] = []
    tail = f" {tag}\n"
    for qid in sorted(run):
        if not run[qid]:
            continue
        docids, scores = zip(*run[qid], strict=True)
        values = _ordered_scores(qid, scores)
        head = f"{qid} Q0 "
        lines = [
            f"{docid} {rank} {value!r}"
            for docid, rank, value in zip(docids, _ranks(len(values)), values, strict=False)
        ]
        parts.append(head + (tail + head).join(lines) + tail)
    write_bytes_atomic(path, "".join(parts).encode("utf-8"))


def _ranks(n: int) -> Sequence[str]:
    """``"1"``, ..., ``str(n)``: the rank column's strings (made once for the usual depths)."""
    return _RANK_STRINGS if n <= len(_RANK_STRINGS) else [str(r) for r in range(1, n + 1)]


_RANK_STRINGS = tuple(str(r) for r in range(1, 1001))


def _ordered_scores(qid: str, scores: Sequence[float]) -> list[float]:
    """``scores`` as floats; raises at the first rank whose score is not finite or above the rank before."""
    values = np.asarray(scores, dtype=np.float64)
    previous = np.empty_like(values)
    previous[0] = np.inf
    previous[1:] = values[:-1]
    bad = ~np.isfinite(values) | (values > previous)
    if bad.any():
        rank = int(np.argmax(bad)) + 1
        value = float(values[rank - 1])
        raise ValueError(
            f"query {qid!r} rank {rank}: score {value!r} is not finite or above the score of the rank before;"
            " order passages with analysis.stats.ranking.rank_by_score before writing"
        )
    return values.tolist()
