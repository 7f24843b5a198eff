"""Read, validate and write TREC qrels and run files (plan sections "Quality" and "Reproducibility").

Run files have six whitespace-separated columns ``qid Q0 docid rank score tag``; qrels have four
``qid iter docid relevance``. Column 2 of both is ignored, as trec_eval ignores it. Every violation raises
:class:`TrecFormatError` naming the file, the line, what was expected and how to fix it.

Run validation (what "valid" means here, precisely):

* the file is UTF-8, not empty, and every non-blank line has exactly six columns;
* ``rank`` is an integer, ``score`` a finite float (``nan`` and ``inf`` are refused);
* a docid appears at most once per query and a rank at most once per query;
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
import math
import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis.atomic import write_bytes_atomic

__all__ = ["RunTable", "TrecFormatError", "read_qrels", "read_run", "read_run_table", "write_run"]

RUN_COLUMNS = "qid Q0 docid rank score tag"
QRELS_COLUMNS = "qid iter docid relevance"


class TrecFormatError(ValueError):
    """A malformed TREC file; the message names the file, the line, what was expected and the fix."""

    def __init__(self, path: Path | str, line: int | None, expected: str, fix: str) -> None:
        self.path = str(path)
        self.line = line
        self.expected = expected
        self.fix = fix
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: expected {expected}. Fix: {fix}")

    def __reduce__(self) -> tuple[type, tuple[str, int | None, str, str]]:  # picklable across processes
        return (type(self), (self.path, self.line, self.expected, self.fix))


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


def _read_text(path: Path) -> str:
    return _decode(path, path.read_bytes())


def _decode(path: Path, data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TrecFormatError(
            path, line, "UTF-8 text", "re-encode the file as UTF-8 (e.g. `iconv -t UTF-8`)"
        ) from exc
    return text


def _require_rows(path: Path, tokens: list[str]) -> None:
    if not tokens:
        raise TrecFormatError(path, None, f"at least one line `{RUN_COLUMNS}` (the file is empty)",
                              "write the run again; an empty run is never valid")


_OTHER_SEPARATORS = ("\t", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f")


def _space_separated(text: str) -> bool:
    """True for ASCII text whose only separators are " " and "\n". Then a line has at most (spaces + 1)
    columns, so "every line has ncols - 1 spaces" and "ncols * lines tokens in all" together mean that every
    line has exactly ncols columns."""
    return text.isascii() and not any(sep in text for sep in _OTHER_SEPARATORS)


def _rows(path: Path, text: str, ncols: int, columns: str) -> tuple[list[str], np.ndarray]:
    """All tokens (row-major) and the 1-based line number of each row; checks column counts."""
    if not text:
        return [], np.zeros(0, dtype=np.int64)
    if _space_separated(text):
        lines_list = text.split("\n")
        if lines_list[-1] == "":
            lines_list.pop()
        spaces = np.fromiter(map(str.count, lines_list, itertools.repeat(" ")), dtype=np.int64,
                             count=len(lines_list))
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
        parts = line.split()
        if not parts:
            continue
        if len(parts) != ncols:
            raise TrecFormatError(path, number, f"{ncols} columns `{columns}`, found {len(parts)}",
                                  "separate columns by whitespace; ids must not contain spaces")
        tokens.extend(parts)
        lines.append(number)
    return tokens, np.asarray(lines, dtype=np.int64)


def _parse_numbers(path: Path, values: list[str], lines: np.ndarray, kind: type, what: str) -> np.ndarray:
    dtype = np.int64 if kind is int else np.float64
    arr: np.ndarray | None = None
    if values:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpy warns when it stops before the end: then parse slowly
            try:
                arr = np.fromstring(" ".join(values), dtype=dtype, sep=" ")
            except (ValueError, DeprecationWarning):
                arr = None
        if arr is not None and arr.size != len(values):
            arr = None
    if arr is None:
        try:
            arr = np.array([kind(v) for v in values], dtype=dtype)
        except ValueError:
            for v, line in zip(values, lines.tolist(), strict=True):
                try:
                    kind(v)
                except ValueError:
                    kind_word = "an integer" if kind is int else "a decimal number such as 0.25 or 1e-05"
                    raise TrecFormatError(path, line, f"{what}, found {v!r}",
                                          f"write the {what.split()[-1]} as {kind_word}") from None
            raise
    if kind is float:
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            i = int(bad[0])
            raise TrecFormatError(path, int(lines[i]), f"{what}, found {values[i]!r}",
                                  "every score must be a finite number; drop or re-score the passage")
    return arr


def read_run_table(
    path: Path | str, *, qrels_qids: Collection[str] | None = None, allow_unknown_queries: bool = False
) -> RunTable:
    """Read and validate a TREC run file into a :class:`RunTable` (see the module docstring)."""
    path = Path(path)
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    text = _decode(path, data)
    del data
    tokens, lines = _rows(path, text, 6, RUN_COLUMNS)
    _require_rows(path, tokens)
    qtok, dtok = tokens[0::6], tokens[2::6]
    ranks = _parse_numbers(path, tokens[3::6], lines, int, "an integer rank")
    scores = _parse_numbers(path, tokens[4::6], lines, float, "a finite float score")
    qids_t = tuple(sorted(set(qtok)))
    position = {q: i for i, q in enumerate(qids_t)}
    qinv = np.fromiter(map(position.__getitem__, qtok), dtype=np.int64, count=len(qtok))
    if qrels_qids is not None and not allow_unknown_queries:
        known = set(qrels_qids)
        if not known.issuperset(qids_t):
            for q, line in zip(qtok, lines.tolist(), strict=True):
                if q not in known:
                    raise TrecFormatError(path, line, f"a query id of the qrels, found {q!r}",
                                          "use the run of the matching query set, or allow unknown queries")
    order = np.lexsort((ranks, qinv))
    q_sorted, r_sorted, s_sorted = qinv[order], ranks[order], scores[order]
    same_q = q_sorted[1:] == q_sorted[:-1]
    dup_rank = np.flatnonzero(same_q & (r_sorted[1:] == r_sorted[:-1]))
    if dup_rank.size:
        i = int(order[dup_rank[0] + 1])
        raise TrecFormatError(path, int(lines[i]), f"each rank once per query, rank {ranks[i]} repeats",
                              "number the passages of a query 1..n")
    worse = np.flatnonzero(same_q & (s_sorted[1:] > s_sorted[:-1]))
    if worse.size:
        i, j = int(order[worse[0]]), int(order[worse[0] + 1])
        raise TrecFormatError(
            path, int(lines[j]),
            f"scores that do not increase with rank; rank {ranks[j]} has score {tokens[6 * j + 4]} "
            f"above rank {ranks[i]} (line {int(lines[i])}) with score {tokens[6 * i + 4]}",
            "write ranks in descending score order (analysis.ranking.rank_by_score)",
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
                    raise TrecFormatError(path, int(lines[row]), f"each docid once per query, "
                                          f"{dtok[row]!r} repeats in query {qids_t[qi]!r}",
                                          "remove the duplicate line")
                seen.add(dtok[row])
    return RunTable(qids_t, offsets, docids, s_sorted, sha256=digest)


def read_run(
    path: Path | str, *, qrels_qids: Collection[str] | None = None, allow_unknown_queries: bool = False
) -> dict[str, list[tuple[str, float]]]:
    """qid -> [(docid, score)] in rank order; validated (see the module docstring)."""
    return read_run_table(path, qrels_qids=qrels_qids, allow_unknown_queries=allow_unknown_queries).as_dict()


def read_qrels(path: Path | str) -> dict[str, dict[str, int]]:
    """qid -> docid -> relevance (integer; relevant means > 0). Duplicate judgments are an error."""
    path = Path(path)
    text = _read_text(path)
    tokens, lines = _rows(path, text, 4, QRELS_COLUMNS)
    _require_rows(path, tokens)
    rels = _parse_numbers(path, tokens[3::4], lines, int, "an integer relevance").tolist()
    out: dict[str, dict[str, int]] = {}
    for q, d, rel, line in zip(tokens[0::4], tokens[2::4], rels, lines.tolist(), strict=True):
        judged = out.setdefault(q, {})
        if d in judged:
            raise TrecFormatError(path, line, f"one judgment per (query, docid); {d!r} repeats in {q!r}",
                                  "remove the duplicate judgment")
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
    for qid in sorted(run):
        previous = float("inf")
        for rank, (docid, score) in enumerate(run[qid], start=1):
            value = float(score)
            if not (math.isfinite(value) and value <= previous):
                raise ValueError(
                    f"query {qid!r} rank {rank}: score {value!r} is not finite or above the score of the "
                    "rank before; order passages with analysis.ranking.rank_by_score before writing"
                )
            previous = value
            parts.append(f"{qid} Q0 {docid} {rank} {value!r} {tag}\n")
    write_bytes_atomic(path, "".join(parts).encode("utf-8"))
