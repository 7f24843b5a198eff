"""Opening the text files the study reads: UTF-8, a leading byte-order mark removed and reported.

A UTF-8 byte-order mark (``EF BB BF``, as some Windows editors write) would otherwise become part of the
first field (the first query id of a topics file: that query would match no judgment and score 0). Readers
open text through ``open_text``, which strips the mark and says so on stderr, naming the file. CRLF line
ends are the readers' to strip (``line.rstrip("\\r\\n")``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from bench.core.errors import BenchError
from bench.integrity.enforce import require_locked

BOM = b"\xef\xbb\xbf"


def has_bom(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(len(BOM)) == BOM


def open_text(path: Path, *, newline: str | None = None, stream: TextIO | None = None) -> _NoInnerBom:
    """``path`` opened for reading as UTF-8; a leading byte-order mark is skipped and reported. A data file
    of the study is checked against datasets.lock first (``bench.integrity.enforce.require_locked``)."""
    require_locked(path)
    note_bom(path, stream)
    return _NoInnerBom(path, open(path, encoding="utf-8-sig", newline=newline))


class _NoInnerBom:
    """A text file read line by line that refuses a byte-order mark after the first byte (two files
    concatenated: the mark would become part of an id), naming the file and the line."""

    def __init__(self, path: Path, fh: TextIO) -> None:
        self.path, self.fh, self.line = path, fh, 0

    def __enter__(self) -> _NoInnerBom:
        return self

    def __exit__(self, *exc: object) -> None:
        self.fh.close()

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        line = next(self.fh)
        self.line += 1
        if "\ufeff" in line:
            raise BenchError(
                f"{self.path}:{self.line}: a UTF-8 byte-order mark (U+FEFF) inside the file, "
                "not at its first byte (two files concatenated?). Fix: remove it (e.g. `sed -i "
                f"'s/\\xEF\\xBB\\xBF//g' {self.path}`) and check the lines around it"
            )
        return line


def note_bom(path: Path, stream: TextIO | None = None) -> None:
    """Say on stderr (or ``stream``) that ``path`` starts with a byte-order mark, which its reader skips."""
    if has_bom(path):
        print(
            f"{path}: starts with a UTF-8 byte-order mark; ignored (it is not part of the first field)",
            file=stream if stream is not None else sys.stderr,
            flush=True,
        )
