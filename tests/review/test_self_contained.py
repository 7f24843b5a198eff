"""The repository is self-contained: no tracked file refers to notes outside it (the author's FIELD-NOTES,
the notes folder beside the development checkout, the development machines' /work folders). What the code
relies on from such notes is in docs/field-notes.md. DEVIATIONS.md is only appended to, so its older
entries keep citing "FIELD-NOTES"; a later entry says where that material now lives."""

from __future__ import annotations

import re
import subprocess

from tests.conftest import REPO_ROOT

# the sibling folder is spelt in two parts so that this pattern is not itself a reference to it
SIBLING = r"\.\./" + "sha" + r"red\b"
OUTSIDE = re.compile(r"FIELD-NOTES|" + SIBLING + r"|/work/(notes|sha" + r"red|wt)\b")
APPEND_ONLY = {"DEVIATIONS.md"}
EXPLAINS = {"docs/field-notes.md", "tests/review/test_self_contained.py"}  # say what the old citations mean


def tracked_text_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True).stdout
    return [f for f in out.decode().split("\0") if f and not f.startswith("references/") and f != "uv.lock"]


def test_no_tracked_file_refers_outside_the_repository() -> None:
    found = []
    for rel in tracked_text_files():
        path = REPO_ROOT / rel
        if rel in APPEND_ONLY or rel in EXPLAINS or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary
        found += [
            f"{rel}:{n}: {line.strip()[:100]}"
            for n, line in enumerate(text.splitlines(), 1)
            if OUTSIDE.search(line)
        ]
    assert not found, "refers to a file outside the repository:\n" + "\n".join(found)


def test_field_notes_are_in_docs() -> None:
    text = (REPO_ROOT / "docs" / "field-notes.md").read_text(encoding="utf-8")
    sections = (
        "## Typesense",
        "## Models and their traps",
        "## int8 with OpenVINO",
        "## Packages and Python",
        "## The study's own stack on machines without Docker",
    )
    for section in sections:
        assert section in text
