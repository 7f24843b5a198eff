"""Audit rows read from git history and the repository's own files: 1 the plan commit, 2 timestamps,
3 DEVIATIONS.md, 8 licences.

Rows 1-3 need the whole history: a shallow clone fails them with the command that fetches it.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from bench import clock
from bench.audit.rows import Row
from bench.errors import BenchError
from bench.hints import hint
from bench.integrity import git
from bench.integrity.timestamps import verify_all

PLAN = "PLAN.md"
DEVIATIONS = "DEVIATIONS.md"
DEVIATION_TITLE = "# Deviations from PLAN.md"
DEVIATION_FIELDS = ("date", "plan section", "what changes", "why", "expected effect on results")
_HEADING = re.compile(r"^## D-(\d{3}): (\S.*)$")
_FIELD = re.compile(r"^- ([a-z ]+): (\S.*)$")
LICENCE_FILES = {
    "LICENSE": "Apache License\n                           Version 2.0",
    "LICENSES/CC-BY-4.0.txt": "Creative Commons Attribution 4.0 International Public License",
    "runs/LICENSE": "CC BY 4.0",
    "results/LICENSE": "CC BY 4.0",
}


def history_problem(root: Path) -> str | None:
    """Why the history cannot be read (not a git checkout, no commit, shallow clone), or None."""
    if not git.is_repo(root) or git.head_commit(root) is None:
        return f"{root} is not a git checkout with commits: clone the repository with its history"
    shallow = git.run_git(root, "rev-parse", "--is-shallow-repository", check=False).strip()
    if shallow == b"true":
        return "shallow clone: the audit needs the full history; run `git fetch --unshallow` and audit again"
    return None


def plan_row(root: Path, blocked: str | None) -> Row:
    check = "PLAN.md is the first commit, alone, unchanged"
    if blocked:
        return Row(1, check, "FAIL", blocked)
    roots = git.run_git(root, "rev-list", "--max-parents=0", "HEAD").decode().split()
    if len(roots) != 1:
        return Row(1, check, "FAIL", f"expected one root commit, found {len(roots)}")
    first = roots[0]
    files = git.commit_files(root, first)
    if files != [PLAN]:
        return Row(1, check, "FAIL", f"first commit {first[:7]} holds {files}, not only {PLAN}")
    original = git.show_file(root, first, PLAN)
    if PLAN not in git.commit_files(root, "HEAD"):
        return Row(1, check, "FAIL", f"{PLAN} is missing on HEAD")
    if git.show_file(root, "HEAD", PLAN) != original:
        return Row(1, check, "FAIL", f"{PLAN} on HEAD differs from the first commit {first[:7]}")
    worktree = root / PLAN
    if not worktree.is_file() or worktree.read_bytes() != original:
        return Row(1, check, "FAIL", f"{PLAN} in the working tree differs from the first commit {first[:7]}")
    return Row(1, check, "OK", f"first commit {first[:7]} holds only {PLAN}; HEAD and working tree identical")


def timestamps_row(root: Path, blocked: str | None) -> Row:
    check = "timestamps (PLAN.md.ots, every DEVIATIONS.md version)"
    if blocked:
        return Row(2, check, "FAIL", blocked)

    try:
        result = verify_all(root)
    except BenchError as exc:
        return Row(2, check, "FAIL", exc.message.splitlines()[0])
    details = tuple(f"{r.file}: {r.report.verdict} ({r.report.detail})" for r in result.rows)
    counts: dict[str, int] = {}
    for r in result.rows:
        counts[r.report.verdict] = counts.get(r.report.verdict, 0) + 1
    summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    code = result.exit_code
    if code == 1:
        return Row(2, check, "FAIL", f"{summary}; see `{hint('timestamps verify')}`", details)
    if code == 3:
        return Row(2, check, "NOT YET", f"{summary}: stamp on a machine with internet "
                   f"(`{hint('timestamps stamp PLAN.md')}`, `... DEVIATIONS.md`)", details)  # fmt: skip
    if "pending" in counts:  # a calendar's promise proves nothing until its Bitcoin attestation is merged in
        return Row(2, check, "NOT YET", f"{summary}: the Bitcoin attestations arrive hours after stamping; "
                   f"run `{hint('timestamps upgrade')}` a day later and commit", details)  # fmt: skip
    return Row(2, check, "OK", summary, details)


def plan_headings(plan_text: str) -> set[str]:
    return {line[3:].strip() for line in plan_text.splitlines() if line.startswith("## ")}


def deviation_problems(text: str, headings: set[str], today: dt.date) -> list[str]:
    """Structural problems of a DEVIATIONS.md text, with line numbers (empty: valid). The file's own header
    describes the format; ``tests/test_deviations.py`` checks the same rules independently."""
    problems: list[str] = []
    lines = text.splitlines()
    if not lines or lines[0] != DEVIATION_TITLE:
        problems.append(f"line 1: expected the title {DEVIATION_TITLE!r}")
    starts = [i for i, line in enumerate(lines) if line.startswith("## ")]
    last_date: dt.date | None = None
    for n, start in enumerate(starts, 1):
        m = _HEADING.match(lines[start])
        if m is None:
            problems.append(f"line {start + 1}: heading is not '## D-NNN: <short title>'")
            continue
        if int(m.group(1)) != n:
            problems.append(f"line {start + 1}: id D-{m.group(1)} should be D-{n:03d} (consecutive)")
        end = starts[n] if n < len(starts) else len(lines)
        fields = []
        for lineno, line in enumerate(lines[start + 1 : end], start + 2):
            if not line.strip():
                continue
            fm = _FIELD.match(line)
            if fm is None:
                problems.append(f"line {lineno}: expected '- <field>: <text>'")
                continue
            fields.append((fm.group(1), fm.group(2), lineno))
        if tuple(f[0] for f in fields) != DEVIATION_FIELDS:
            problems.append(f"line {start + 1}: D-{m.group(1)} fields are {[f[0] for f in fields]}, "
                            f"expected {list(DEVIATION_FIELDS)}")  # fmt: skip
            continue
        values = {name: (value, lineno) for name, value, lineno in fields}
        date_text, lineno = values["date"]
        try:
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date_text):
                raise ValueError(date_text)
            date = dt.date.fromisoformat(date_text)
        except ValueError:
            problems.append(f"line {lineno}: date {date_text!r} is not YYYY-MM-DD")
        else:
            if date > today:
                problems.append(f"line {lineno}: date {date_text} is in the future")
            if last_date is not None and date < last_date:
                problems.append(f"line {lineno}: date {date_text} is earlier than the entry before")
            last_date = date
        section, lineno = values["plan section"]
        if section not in headings:
            problems.append(f"line {lineno}: plan section {section!r} is not a '## ' heading of PLAN.md")
    return problems


def deviations_row(root: Path, blocked: str | None, today: dt.date | None = None) -> Row:
    check = "DEVIATIONS.md valid, only appended to"
    if blocked:
        return Row(3, check, "FAIL", blocked)
    path = root / DEVIATIONS
    if not path.is_file():
        return Row(3, check, "FAIL", f"{DEVIATIONS} is missing")
    current = path.read_bytes()
    today = today or clock.today()
    headings = plan_headings((root / PLAN).read_text(encoding="utf-8"))
    problems = [f"{DEVIATIONS} {p}" for p in deviation_problems(current.decode("utf-8"), headings, today)]
    versions = git.file_versions(root, DEVIATIONS)
    for version in versions:
        if not current.startswith(version.data.rstrip(b"\n")):
            problems.append(f"{DEVIATIONS} of commit {version.commit[:7]} ({version.date[:10]}) was edited, "
                            "not appended to: the current file does not start with it")  # fmt: skip
    entries = sum(1 for line in current.decode("utf-8").splitlines() if _HEADING.match(line))
    if problems:
        return Row(3, check, "FAIL", problems[0], tuple(problems))
    return Row(3, check, "OK", f"{entries} entries, every plan section exists; {len(versions)} committed "
               "versions, each a prefix of the current file")  # fmt: skip


def licences_row(root: Path) -> Row:
    check = "licences (Apache-2.0 code, CC BY 4.0 runs and results)"
    problems = []
    for rel, marker in LICENCE_FILES.items():
        path = root / rel
        if not path.is_file():
            problems.append(f"{rel} is missing")
        elif marker not in path.read_text(encoding="utf-8", errors="replace"):
            problems.append(f"{rel} does not contain {marker.splitlines()[0]!r}")
    if problems:
        return Row(8, check, "FAIL", "; ".join(problems))
    return Row(8, check, "OK", ", ".join(LICENCE_FILES))
