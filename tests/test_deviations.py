"""DEVIATIONS.md: structure of every entry, real plan sections, consecutive ids, valid dates, append-only
history (format in the file's own header)."""

from __future__ import annotations

import datetime as dt
import re
import subprocess
from pathlib import Path

import pytest

FIELDS = ("date", "plan section", "what changes", "why", "expected effect on results")
HEADING = re.compile(r"^## D-(\d{3}): (\S.*)$")


def plan_headings(plan_text: str) -> set[str]:
    return {line[3:].strip() for line in plan_text.splitlines() if line.startswith("## ")}


def deviation_problems(text: str, headings: set[str], today: dt.date | None = None) -> list[str]:
    """Every structural problem of a DEVIATIONS.md text, with line numbers (empty list: valid)."""
    today = today or dt.datetime.now(dt.UTC).date()
    problems: list[str] = []
    lines = text.splitlines()
    if not lines or lines[0] != "# Deviations from PLAN.md":
        problems.append("line 1: expected the title '# Deviations from PLAN.md'")
    starts = [i for i, line in enumerate(lines) if line.startswith("## ")]
    for i in starts:
        if not HEADING.match(lines[i]):
            problems.append(f"line {i + 1}: '##' heading is not '## D-NNN: <short title>': {lines[i]!r}")
    entries = [i for i in starts if HEADING.match(lines[i])]
    last_date: dt.date | None = None
    for n, start in enumerate(entries, 1):
        m = HEADING.match(lines[start])
        assert m is not None
        if int(m.group(1)) != n:
            problems.append(
                f"line {start + 1}: id D-{m.group(1)} should be D-{n:03d} (consecutive from D-001)"
            )
        end = starts[starts.index(start) + 1] if start != starts[-1] else len(lines)
        body = [ln for ln in lines[start + 1 : end] if ln.strip()]
        fields: list[tuple[str, str, int]] = []
        for offset, line in enumerate(lines[start + 1 : end], start + 2):
            if not line.strip():
                continue
            fm = re.match(r"^- ([a-z ]+): (\S.*)$", line)
            if fm is None:
                problems.append(f"line {offset}: expected '- <field>: <text>', got {line[:60]!r}")
                continue
            fields.append((fm.group(1), fm.group(2).strip(), offset))
        names = tuple(f[0] for f in fields)
        if names != FIELDS:
            problems.append(
                f"line {start + 1}: D-{m.group(1)} has fields {list(names)}, expected {list(FIELDS)}"
            )
            continue
        if len(body) != len(FIELDS):
            continue  # already reported line by line
        values = {name: (value, lineno) for name, value, lineno in fields}
        date_text, lineno = values["date"]
        try:
            date = dt.date.fromisoformat(date_text)
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date_text):
                raise ValueError(date_text)
        except ValueError:
            problems.append(f"line {lineno}: date {date_text!r} is not a valid YYYY-MM-DD date")
        else:
            if date > today:
                problems.append(f"line {lineno}: date {date_text} is in the future")
            if last_date is not None and date < last_date:
                problems.append(
                    f"line {lineno}: date {date_text} is earlier than the entry before (newest last)"
                )
            last_date = date
        section, lineno = values["plan section"]
        if section not in headings:
            problems.append(f"line {lineno}: plan section {section!r} is not a '##' heading of PLAN.md")
    return problems


@pytest.fixture(scope="module")
def headings(repo_root: Path) -> set[str]:
    return plan_headings((repo_root / "PLAN.md").read_text(encoding="utf-8"))


def test_repository_deviations_are_valid(repo_root: Path, headings: set[str]) -> None:
    text = (repo_root / "DEVIATIONS.md").read_text(encoding="utf-8")
    assert deviation_problems(text, headings) == []
    assert len(re.findall(r"^## D-\d{3}: ", text, flags=re.M)) >= 2


def test_deviations_are_append_only_in_history(repo_root: Path) -> None:
    """Every version in any commit of the history (merges and both of their sides included: `git log` would
    skip a version only a merge held) is a prefix of the current file: entries are appended, never
    edited."""
    current = (repo_root / "DEVIATIONS.md").read_bytes()
    commits = subprocess.run(
        ["git", "-C", str(repo_root), "rev-list", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.split()
    found = subprocess.run(
        ["git", "-C", str(repo_root), "cat-file", "--batch-check=%(objectname)"],
        input="".join(f"{c}:DEVIATIONS.md\n" for c in commits),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    blobs = {b: c for c, b in zip(commits, found, strict=True) if not b.endswith("missing")}
    assert blobs, "DEVIATIONS.md has never been committed"
    for blob, commit in blobs.items():
        old = subprocess.run(
            ["git", "-C", str(repo_root), "cat-file", "blob", blob], capture_output=True, check=True
        ).stdout
        assert current.startswith(old.rstrip(b"\n")), (
            f"DEVIATIONS.md of {commit[:7]} was edited, not appended to"
        )


HEADINGS = {"Data", "Costs"}
GOOD = """# Deviations from PLAN.md

Header text.

## D-001: First
- date: 2026-11-01
- plan section: Data
- what changes: a
- why: b
- expected effect on results: c

## D-002: Second
- date: 2026-11-02
- plan section: Costs
- what changes: a
- why: b
- expected effect on results: c
"""
TODAY = dt.date(2026, 11, 29)


def test_good_sample_is_valid() -> None:
    assert deviation_problems(GOOD, HEADINGS, TODAY) == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "## D-002: Second",
            "## D-003: Second",
            "line 12: id D-003 should be D-002 (consecutive from D-001)",
        ),
        (
            "## D-002: Second",
            "## D-2: Second",
            "line 12: '##' heading is not '## D-NNN: <short title>': '## D-2: Second'",
        ),
        (
            "- date: 2026-11-02",
            "- date: 2026-02-30",
            "line 13: date '2026-02-30' is not a valid YYYY-MM-DD date",
        ),
        (
            "- date: 2026-11-02",
            "- date: 2026-11-2",
            "line 13: date '2026-11-2' is not a valid YYYY-MM-DD date",
        ),
        ("- date: 2026-11-02", "- date: 2027-01-01", "line 13: date 2027-01-01 is in the future"),
        (
            "- date: 2026-11-02",
            "- date: 2026-10-30",
            "line 13: date 2026-10-30 is earlier than the entry before (newest last)",
        ),
        (
            "- plan section: Costs",
            "- plan section: Cost",
            "line 14: plan section 'Cost' is not a '##' heading of PLAN.md",
        ),
        (
            "- why: b\n- expected effect on results: c\n",
            "- expected effect on results: c\n- why: b\n",
            "line 12: D-002 has fields ['date', 'plan section', 'what changes', "
            "'expected effect on results', 'why'], "
            "expected ['date', 'plan section', 'what changes', 'why', 'expected effect on results']",
        ),
        (
            "- why: b\n- expected effect on results: c\n",
            "- expected effect on results: c\n",
            "line 12: D-002 has fields ['date', 'plan section', 'what changes', "
            "'expected effect on results'], "
            "expected ['date', 'plan section', 'what changes', 'why', 'expected effect on results']",
        ),
        (
            "- what changes: a\n- why: b\n- expected effect on results: c\n",
            "- what changes: a\nfree text\n- why: b\n- expected effect on results: c\n",
            "line 16: expected '- <field>: <text>', got 'free text'",
        ),
        (
            "# Deviations from PLAN.md",
            "# Deviations",
            "line 1: expected the title '# Deviations from PLAN.md'",
        ),
    ],
)
def test_each_broken_rule_is_reported(old: str, new: str, expected: str) -> None:
    text = GOOD[: GOOD.index("## D-002")] + GOOD[GOOD.index("## D-002") :].replace(old, new, 1)
    if old.startswith("# Dev"):
        text = GOOD.replace(old, new, 1)
    assert expected in deviation_problems(text, HEADINGS, TODAY)


def test_empty_field_is_reported() -> None:
    text = GOOD.replace(
        "- why: b\n- expected effect on results: c\n\n## D-002",
        "- why:\n- expected effect on results: c\n\n## D-002",
    )
    problems = deviation_problems(text, HEADINGS, TODAY)
    assert "line 9: expected '- <field>: <text>', got '- why:'" in problems
