"""The steps of ``docs/runbook.md`` as data: one parser for ``bench status`` and for ``tests/runbook``.

A step is a fenced ``sh`` block whose first line is ``# step: <id> · machine: <machine>``; every further
non-empty line that is not a comment is one command, run in order (no continuation lines). Reading this file
needs nothing heavy (no torch, no pyarrow).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from bench.core.errors import BenchError

RUNBOOK = Path("docs") / "runbook.md"
MACHINES = ("internet", "gpu-desktop", "cpu-server", "any")
_MARKER = re.compile(r"^# step: (?P<id>[a-z0-9-]+) · machine: (?P<machine>[a-z-]+)$")


@dataclass(frozen=True)
class Step:
    id: str
    machine: str
    commands: tuple[str, ...]
    line: int  # line of the marker in docs/runbook.md (1-based)


def parse_runbook(text: str, path: Path | str = RUNBOOK) -> list[Step]:
    """Every step of the runbook, in order; BenchError naming the line for a malformed block."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.replace("\r\n", "\n").split("\n")
    steps: list[Step] = []
    seen: set[str] = set()
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```sh":
            i += 1
            continue
        start = i + 1
        j = start
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        if j == len(lines):
            raise BenchError(f"{path}:{i + 1}: a ```sh block is not closed; close it with ```")
        body = lines[start:j]
        m = _MARKER.match(body[0].strip()) if body else None
        if m is not None:
            if m["machine"] not in MACHINES:
                raise BenchError(
                    f"{path}:{start + 1}: machine {m['machine']!r} is not one of {', '.join(MACHINES)}"
                )
            if m["id"] in seen:
                raise BenchError(f"{path}:{start + 1}: step {m['id']!r} appears twice; step ids are unique")
            seen.add(m["id"])
            commands = []
            for n, raw in enumerate(body[1:], start + 2):
                line = raw.strip()
                if not line or line.startswith("#"):
                    continue
                if line.endswith("\\"):
                    raise BenchError(f"{path}:{n}: continuation lines are not allowed; one command per line")
                commands.append(line)
            if not commands:
                raise BenchError(f"{path}:{start + 1}: step {m['id']!r} has no command")
            steps.append(Step(m["id"], m["machine"], tuple(commands), start + 1))
        i = j + 1
    return steps


def read_runbook(root: Path) -> list[Step]:
    path = root / RUNBOOK
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BenchError(
            f"{path}: cannot read the runbook ({exc.strerror}); it belongs to the checkout"
        ) from exc
    return parse_runbook(text, path)
