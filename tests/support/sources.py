"""One parse of each source text per test worker, shared by the repository-rule tests of tests/hygiene (one
xdist unit, tests/support/xdist_groups.py): seven of them walk the trees of bench/, analysis/, tests/ and
benchmarks/, and each parsed every file again (about 1 s a pass on the 2-vCPU machine).

The cache is keyed by the text itself, so a file that a test writes or rewrites is parsed as it is now. The
trees are only read (``ast.walk``, ``ast.unparse``), never changed. A syntax error is raised again by a
parse that names the file."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.cache
def _parsed(text: str) -> ast.Module:
    return ast.parse(text)


def parse(text: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(text, filename=filename)``, once per distinct text in this process."""
    try:
        return _parsed(text)
    except SyntaxError:
        return ast.parse(text, filename=filename)  # raises again, naming the file


def source(path: Path) -> str:
    """The file's text (a UTF-8 byte-order mark dropped)."""
    return path.read_text(encoding="utf-8-sig")


def tree(path: Path) -> ast.Module:
    """The parsed module of ``path`` (see :func:`parse`)."""
    return parse(source(path), str(path))
