"""The one column rule of TREC run and qrels lines, shared by ``analysis``'s readers
(:mod:`analysis.inputs.trec`) and ``bench audit``'s check of committed runs.

trec_eval (usnistgov/trec_eval, ``get_trec_results.c`` ``parse_results_line`` and ``get_qrels.c``)
walks each line with C's ``isspace()`` and never calls ``setlocale``, so in the "C" locale exactly six
bytes separate columns: space, tab, line feed, vertical tab, form feed and carriage return
(``SEPARATORS``). Anything else is part of a column: a no-break space (U+00A0), U+2028 or the ASCII
separators ``\\x1c``-``\\x1f`` do not separate. Python's ``str.split()`` splits on all of these, so the
readers do not use it on such text. A line is read the same by trec_eval, the report and the audit.

Characters no TREC tool writes are refused wherever they stand (:func:`stray_character`): a control
character other than the separators (a NUL, ``\\x1c``..), and a byte-order mark (U+FEFF) anywhere but the
first byte of the file (two files concatenated: the mark would become part of a query id).
"""

from __future__ import annotations

import re

__all__ = ["SEPARATORS", "run_line_problem", "split_columns", "stray_character"]

SEPARATORS = " \t\n\x0b\x0c\r"
"""The bytes that separate columns: C ``isspace()`` in the "C" locale, as trec_eval reads."""

_SPLIT = re.compile(r"[ \t\n\x0b\x0c\r]+")
_STRAY = re.compile(r"[\x00-\x08\x0e-\x1f\x7f\ufeff]")
_UNICODE_SPACE = re.compile(r"[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


def split_columns(line: str) -> list[str]:
    """The columns of ``line``, split on :data:`SEPARATORS` only (runs of them; none at either end)."""
    return [c for c in _SPLIT.split(line) if c]


def stray_character(text: str) -> tuple[int, str] | None:
    """(1-based line, what) of the first character no TREC file may hold, or None. ``text`` is the file
    after its leading byte-order mark (if any) was removed."""
    found = _STRAY.search(text)
    if found is None:
        return None
    line = text.count("\n", 0, found.start()) + 1
    ch = found.group()
    if ch == "\ufeff":
        return line, (
            "a UTF-8 byte-order mark (U+FEFF, bytes ef bb bf) inside the file, not at its first "
            "byte (two files concatenated?)"
        )
    return line, f"a control character {ch!r} (no TREC tool writes one; the file is damaged or not text)"


def unicode_space(line: str) -> str | None:
    """A note for a line that holds a Unicode space (which does not separate columns), or None."""
    found = _UNICODE_SPACE.search(line)
    if found is None:
        return None
    return (
        f"; it holds {found.group()!r} (U+{ord(found.group()):04X}), which does not separate columns: "
        "trec_eval separates by ASCII space, tab, CR, LF, VT and FF only"
    )


def run_line_problem(text: str) -> tuple[int, str] | None:
    """(1-based line, why) of the first line of a TREC run file's ``text`` that is not ``qid Q0 docid rank
    score tag`` under the one column rule (a quick check, as ``bench audit`` makes it: six columns, an
    integer rank, a number score, no stray character), or None."""
    text = text.removeprefix("\ufeff")
    stray = stray_character(text)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, 1):
        if stray is not None and stray[0] == number:
            return number, stray[1]
        cols = split_columns(line)
        if len(cols) != 6:
            return number, f"{len(cols)} columns, not 6{unicode_space(line) or ''}"
        if not cols[3].isdigit() or not _is_number(cols[4]):
            return number, "the rank is not an integer or the score not a number"
    return None


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True
