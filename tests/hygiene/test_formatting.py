"""ruff format decides the layout of the code; a ``# fmt: skip`` (or ``# fmt: off``) marker is allowed only
where a table's alignment is the point, with the reason after it on the same line
(``# fmt: skip  # table: ...``), and fewer than 20 of them in the whole repository."""

from __future__ import annotations

import io
import subprocess
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_MARKERS = 19
MARKERS = ("fmt: skip", "fmt: off", "fmt: on")


def markers(path: Path, text: str) -> list[tuple[str, bool]]:
    """``path:line`` of every fmt marker comment, and whether a reason follows it on its line."""
    found = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type != tokenize.COMMENT:
            continue
        body = tok.string.lstrip("#").strip()
        for marker in MARKERS:
            if body.startswith(marker):
                reason = body[len(marker) :].strip().lstrip("#:").strip()
                found.append((f"{path}:{tok.start[0]}", marker == "fmt: on" or bool(reason)))
    return found


def repository_markers() -> list[tuple[str, bool]]:
    files = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    found = []
    for name in files:
        path = ROOT / name
        text = path.read_text(encoding="utf-8-sig") if path.is_file() else ""
        if "fmt:" in text:  # every marker holds it; tokenising only these files saves 2 s
            found += markers(Path(name), text)
    return found


def test_fmt_markers_are_few_and_each_gives_its_reason() -> None:
    found = repository_markers()
    without = [where for where, has_reason in found if not has_reason]
    assert without == [], f"a fmt marker without its reason on the line (add '  # table: why'): {without}"
    assert len(found) <= MAX_MARKERS, (
        f"{len(found)} fmt markers; at most {MAX_MARKERS}: let ruff format decide"
    )


def test_the_check_finds_a_bare_marker_and_accepts_a_reasoned_one() -> None:
    text = (
        "x = [1,  2]  # fmt: skip\n"
        "y = [1,  2]  # fmt: skip  # table: columns aligned with the plan's\n"
        "s = '# fmt: skip'\n"
    )
    assert markers(Path("m.py"), text) == [("m.py:1", False), ("m.py:2", True)]
