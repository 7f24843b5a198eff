"""Lock entries for the files bundled in the repository (``data/bundled``), with sources from SOURCES.md.

The source of each file (repository, commit, path) is read from the tables of ``data/bundled/SOURCES.md``;
size, SHA-256 and rows are computed from the file itself (never copied from the note).
"""

from __future__ import annotations

import re
from pathlib import Path

from bench.core.errors import BenchError
from bench.integrity.datalock import Entry, Source
from bench.integrity.hashing import sha256_file
from bench.integrity.rows import count_rows

BUNDLED = Path("data") / "bundled"
SOURCES_NOTE = BUNDLED / "SOURCES.md"
_SOURCE = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+|same repo)@(?P<rev>[0-9a-f]{40}|commit):(?P<path>\S+)")


def sources_table(root: Path) -> dict[str, tuple[Source, str]]:
    """Repository-relative file path -> (its source, the note's SHA-256 for it) from SOURCES.md's tables."""
    note = root / SOURCES_NOTE
    section = ""
    out: dict[str, tuple[Source, str]] = {}
    last: tuple[str, str] | None = None
    for lineno, line in enumerate(note.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("## "):
            section = line[3:].split()[0].rstrip("/")
            last = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 5 or cells[0] in ("file", "") or set(cells[0]) <= {"-"}:
            continue
        m = _SOURCE.match(cells[1])
        if m is None:
            raise BenchError(
                f"{note}:{lineno}: cannot read the source {cells[1]!r} (expected repo@commit:path)."
            )
        repo, rev = m["repo"], m["rev"]
        if repo == "same repo":
            if last is None:
                raise BenchError(f"{note}:{lineno}: 'same repo' with no earlier row in this table.")
            repo, rev = last
        last = (repo, rev)
        rel = (BUNDLED / section / cells[0]).as_posix()
        out[rel] = (Source(repo, rev, m["path"], "github"), cells[3])
    return out


def bundled_entries(root: Path) -> dict[str, Entry]:
    """An entry for every file under data/bundled except SOURCES.md, computed from the files."""
    table = sources_table(root)
    files = sorted(p for p in (root / BUNDLED).rglob("*") if p.is_file() and p.name != "SOURCES.md")
    entries: dict[str, Entry] = {}
    for file in files:
        rel = file.relative_to(root).as_posix()
        if rel not in table:
            raise BenchError(
                f"{file}: bundled file has no row in {root / SOURCES_NOTE}; document its source."
            )
        source, _note_sha = table[rel]
        rows, rule = count_rows(file)
        entries[rel] = Entry(
            dataset="bundled",
            base="repo",
            path=rel,
            source=source,
            size=file.stat().st_size,
            sha256=sha256_file(file),
            rows=rows,
            rows_rule=rule,
        )
    return entries
