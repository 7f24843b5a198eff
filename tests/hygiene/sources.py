"""The Python files the hygiene checks walk, parsed once per test process: several checks walk every file of
bench/, analysis/, tests/ and benchmarks/ (function-level imports, function lengths, the loopback and
fake-reranker rules), each parse of them all about a CPU-second. A file is read every time and parsed again
whenever its text differs (the checks' own tests write files into their temporary folders)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


def text(path: Path) -> str:
    """``path``'s text (UTF-8, a leading byte-order mark dropped)."""
    return path.read_text(encoding="utf-8-sig")


def tree(path: Path) -> ast.Module:
    """``path`` parsed (the path as its file name, for a syntax error's message); read it, never change it."""
    return _parse(str(path), text(path))


@functools.cache
def _parse(filename: str, source: str) -> ast.Module:
    return ast.parse(source, filename=filename)
