"""The phase table (docs/phases.md) lists every `bench` subcommand
with the compose service it runs in: `bench` (GPU) or `bench-cpu` (profile cpu, no GPU
reservation), both defined in compose.yaml."""

from __future__ import annotations

import re
from pathlib import Path

from bench.cli import COMMANDS

NEW_PHASES = (
    "bench latency gpu",
    "bench latency cpu",
    "bench latency api",
    "bench latency first-stage",
    "bench int8 calibration-set",
    "bench int8 quantize",
    "bench int8 agreement",
    "bench judged prepare",
    "bench judged run",
    "analysis judged",
    "--prices",
    "bench audit",
    "bench reproduce",
)


PHASES_DOC = Path("docs") / "phases.md"


def phase_rows(repo_root: Path) -> list[list[str]]:
    """The rows of the table whose header starts with ``| phase |`` (the separator row left out)."""
    lines = (repo_root / PHASES_DOC).read_text(encoding="utf-8").splitlines()
    (start,) = [i for i, ln in enumerate(lines) if ln.startswith("| phase |")]
    rows = []
    for ln in lines[start + 1 :]:
        if not ln.startswith("|"):
            break
        if ln.startswith("| "):
            rows.append(ln)
    return [[c.strip() for c in ln.strip("|").split(" | ")] for ln in rows]


def test_every_command_has_a_row_with_a_service(repo_root: Path) -> None:
    rows = phase_rows(repo_root)
    commands = " ".join(r[1] for r in rows)
    for name in COMMANDS:
        assert f"`bench {name}" in commands, f"`bench {name}` has no row in the phase table of {PHASES_DOC}"
    for phase in NEW_PHASES:
        assert phase in commands, phase
    services = {re.findall(r"`(bench(?:-cpu)?)", r[2])[0] if "`" in r[2] else r[2] for r in rows}
    assert services == {"bench", "bench-cpu", "(outside the container)"}
    compose = (repo_root / "compose.yaml").read_text(encoding="utf-8")
    assert re.search(r"^  bench:$", compose, flags=re.M) and re.search(r"^  bench-cpu:$", compose, flags=re.M)
