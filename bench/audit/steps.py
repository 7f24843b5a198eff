"""For every NOT YET row of the audit, the runbook step that completes it (docs/runbook.md, parsed by
``bench.core.runbook``): its id, its section and its first command, as one detail line of the row."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from bench.audit.rows import Row
from bench.core.errors import BenchError
from bench.core.runbook import RUNBOOK, Step, read_runbook

# row number -> the runbook step that completes it. Row 2 has two: "stamp" writes the proofs, "stamp-later"
# upgrades them to Bitcoin attestations. Results (5), manifests (6), the reranked runs (9) and the analysis
# code recorded in the results (10) are committed by the quality phase and the report; the report's step is
# the one that ends with them in git.
STEPS: dict[int, str] = {2: "stamp-later", 4: "data", 5: "report", 6: "report", 9: "quality", 10: "report"}
NOT_STAMPED = "not stamped"


def _section(lines: Sequence[str], line: int) -> str:
    """The ``## `` heading above ``line`` (1-based) of the runbook."""
    for text in reversed(lines[: line - 1]):
        if text.startswith("## "):
            return text[3:].strip()
    return "?"


def step_line(row: Row, steps: dict[str, Step], lines: Sequence[str]) -> str:
    """One detail line: the step that completes ``row``, or where the runbook's order is read."""
    wanted = "stamp" if row.number == 2 and NOT_STAMPED in row.reason else STEPS.get(row.number)
    step = steps.get(wanted or "")
    if step is None:
        return f"completes it: the runbook's steps in order ({RUNBOOK}); `bench status` names the next one"
    section = _section(lines, step.line)
    return f'completes it: runbook step {step.id} ({RUNBOOK}, "{section}"): {step.commands[0]}'


def with_steps(rows: Sequence[Row], repo: Path) -> list[Row]:
    """``rows`` with the completing step added first to the details of every NOT YET row. The runbook is
    this checkout's (``repo``), also when another repository (the example study) is audited."""
    if not any(r.verdict == "NOT YET" for r in rows):
        return list(rows)
    try:
        steps = {s.id: s for s in read_runbook(repo)}
        lines = (repo / RUNBOOK).read_text(encoding="utf-8").splitlines()
    except (BenchError, OSError):
        steps, lines = {}, []
    return [
        dataclasses.replace(r, details=(step_line(r, steps, lines), *r.details))
        if r.verdict == "NOT YET"
        else r
        for r in rows
    ]
