"""The audit's table: one row per check, each OK, NOT YET or FAIL with a one-line reason and optional
detail lines (per-file verdicts). Exit code: 1 if any row failed, 3 if none failed but one is not done
yet (for example "not stamped"), 0 if every row is OK."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

Verdict = Literal["OK", "NOT YET", "FAIL"]
EXIT_FAIL = 1
EXIT_NOT_YET = 3


@dataclass(frozen=True)
class Row:
    number: int
    check: str
    verdict: Verdict
    reason: str
    details: tuple[str, ...] = field(default=())


def exit_code(rows: Sequence[Row]) -> int:
    verdicts = {r.verdict for r in rows}
    if "FAIL" in verdicts:
        return EXIT_FAIL
    if "NOT YET" in verdicts:
        return EXIT_NOT_YET
    return 0


def format_table(rows: Sequence[Row], *, max_details: int = 20) -> str:
    width = max(len(r.check) for r in rows)
    lines = [f"{'#':>2}  {'check':<{width}}  {'verdict':<7}  reason"]
    for r in rows:
        lines.append(f"{r.number:>2}  {r.check:<{width}}  {r.verdict:<7}  {r.reason}")
        shown = r.details[:max_details]
        lines += [f"{'':>2}  {'':<{width}}  {'':<7}    {d}" for d in shown]
        if len(r.details) > len(shown):
            lines.append(f"{'':>2}  {'':<{width}}  {'':<7}    ... and {len(r.details) - len(shown)} more")
    return "\n".join(lines)
