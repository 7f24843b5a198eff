"""Row counts for ``datasets.lock``: one rule per file type, named in the entry (``rows_rule``).

"rows" are data records: header lines, blank lines and comments are not counted (data/bundled/SOURCES.md).
"""

from __future__ import annotations

import csv
import gzip
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from bench.core.errors import BenchError


def _lines(fh: Iterable[bytes]) -> Iterator[bytes]:
    for line in fh:
        if line.strip():
            yield line


def count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(1 for _ in _lines(fh))


def count_gzip_lines(path: Path) -> int:
    with gzip.open(path, "rb") as fh:
        return sum(1 for _ in _lines(fh))


def count_csv_records(path: Path) -> int:
    with open(path, encoding="utf-8", newline="") as fh:
        return max(sum(1 for row in csv.reader(fh) if row) - 1, 0)


def count_snowball_words(path: Path) -> int:
    """Snowball stop lists: a word starts its line, ``|`` starts a comment."""
    words = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.split("|", 1)[0].strip():
            words += 1
    return words


def count_parquet_rows(path: Path) -> int:
    try:
        # lazy: pyarrow is heavy; only when parquet is read
        import pyarrow.parquet as pq
    except ModuleNotFoundError as exc:  # pragma: no cover - pyarrow comes with the bench group
        raise BenchError(f"{path}: counting parquet rows needs the package 'pyarrow'.") from exc
    return int(pq.ParquetFile(path).metadata.num_rows)


RULES: dict[str, Callable[[Path], int]] = {
    "non-empty lines": count_lines,
    "non-empty lines after gunzip": count_gzip_lines,
    "csv records minus header": count_csv_records,
    "snowball words": count_snowball_words,
    "parquet rows": count_parquet_rows,
}


def rule_for(path: Path) -> str:
    name = path.name
    if name == "stop.txt":
        return "snowball words"
    if name.endswith(".gz"):
        return "non-empty lines after gunzip"
    if name.endswith(".csv"):
        return "csv records minus header"
    if name.endswith(".parquet"):
        return "parquet rows"
    if name.endswith((".tsv", ".jsonl", ".txt", ".trec", ".qrels")):
        return "non-empty lines"
    raise BenchError(f"{path}: no row-count rule for this file type; add one to bench/integrity/rows.py.")


def count_rows(path: Path) -> tuple[int, str]:
    rule = rule_for(path)
    return RULES[rule](path), rule
