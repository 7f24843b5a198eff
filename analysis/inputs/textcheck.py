"""Values shown in messages and written into Markdown: a long value is cut, and a title or note
that would make Markdown structure (a line break, a control character) is refused.

A leaf: imports nothing of the project, so ``analysis`` and ``bench`` readers share it.
"""

from __future__ import annotations

import unicodedata

__all__ = ["LINE_BREAKS", "cut", "one_line_problem"]

SHOWN = 80
"""Characters of a value shown in a message; a longer value is cut and its size in bytes given."""

LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
"""What Python's ``str.splitlines`` breaks on: a line break in some reader (Markdown renderers, editors)."""


def cut(value: str, limit: int = SHOWN) -> str:
    """``value`` as ``repr`` shows it, cut to ``limit`` characters plus ``…(N bytes)`` when longer."""
    shown = repr(value)
    if len(shown) <= limit + 2:
        return shown
    return f"{shown[:limit]}…({len(value.encode('utf-8', 'surrogatepass'))} bytes)"


def one_line_problem(value: str) -> str | None:
    """Why ``value`` cannot stand on one Markdown line (a line break, another control character), or None."""
    for i, ch in enumerate(value):
        control = unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") and ch not in "\t\u200d"
        if ch in LINE_BREAKS or control:
            kind = "line break" if ch in LINE_BREAKS else "control character"
            return f"a {kind} ({ch!r}) at character {i + 1}"
    return None
