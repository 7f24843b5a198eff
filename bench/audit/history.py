"""Audit rows read from git history and the repository's own files: 1 the plan commit, 2 timestamps,
3 DEVIATIONS.md, 8 licences.

Rows 1-3 need the whole history: a shallow clone fails them with the command that fetches it.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from bench.audit.rows import Row
from bench.core import clock
from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.integrity import git
from bench.integrity.ots import ots_command
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


def plan_in_every_commit(root: Path, first: str) -> str | None:
    """The first commit of the history (merges and both of their sides included) whose PLAN.md is not
    byte-identical to the first commit's, or one dated before the plan's commit; None when there is none."""
    commits = git.history(root)
    blobs = git.blobs_at(root, [c for c, _ in commits], PLAN)
    plan_blob = dict(zip((c for c, _ in commits), blobs, strict=True))[first]
    for (commit, _), blob in zip(commits, blobs, strict=True):
        if blob != plan_blob:
            what = (
                "has no PLAN.md" if blob is None else ("holds a PLAN.md that differs from the first commit's")
            )
            return (
                f"commit {commit[:7]} {what} {first[:7]} (`git log --full-history -m -- PLAN.md` lists "
                "it); the plan must never change, not even for a while"
            )
    plan_date = dt.datetime.fromisoformat(dict(commits)[first])
    for commit, date in commits:
        if dt.datetime.fromisoformat(date) < plan_date:
            return (
                f"commit {commit[:7]} is dated {date}, before the plan's commit {first[:7]} "
                f"({plan_date}): the history claims work before the plan"
            )
    return None


def plan_row(root: Path, blocked: str | None) -> Row:
    check = "PLAN.md is the first commit, alone, unchanged in every commit"
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
    problem = plan_in_every_commit(root, first)
    if problem:
        return Row(1, check, "FAIL", problem)
    return Row(
        1,
        check,
        "OK",
        f"first commit {first[:7]} holds only {PLAN}; every commit, HEAD and the "
        "working tree hold it byte for byte",
    )


def timestamps_row(root: Path, blocked: str | None, header_file: Path | None = None) -> Row:
    check = "timestamps (PLAN.md.ots, every DEVIATIONS.md version)"
    if blocked:
        return Row(2, check, "FAIL", blocked)

    try:
        result = verify_all(root, header_file)
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
    if "not stamped" in counts:
        return Row(
            2,
            check,
            "NOT YET",
            f"{summary}: stamp on a machine with internet "
            f"(`{hint('timestamps stamp PLAN.md')}`, `... DEVIATIONS.md`)",
            details,
        )
    if code == 3:  # attested, but not verified against block headers the reviewer trusts
        first = next(r.report for r in result.rows if r.report.verdict == "bitcoin-unchecked")
        return Row(
            2,
            check,
            "NOT YET",
            f"{summary}: no Bitcoin attestation is verified until you check it "
            f"against your own node: run `{ots_command(first.proof, first.expected_sha256)}` (and so "
            "on for each proof, see details) or pass --headers FILE",
            details,
        )
    if "pending" in counts:  # a calendar's promise proves nothing until its Bitcoin attestation is merged in
        return Row(
            2,
            check,
            "NOT YET",
            f"{summary}: the Bitcoin attestations arrive hours after stamping; "
            f"run `{hint('timestamps upgrade')}` a day later and commit",
            details,
        )
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
            problems.append(
                f"line {start + 1}: D-{m.group(1)} fields are {[f[0] for f in fields]}, "
                f"expected {list(DEVIATION_FIELDS)}"
            )
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


_ENTRY_DATE = re.compile(r"^## (D-\d{3}):.*\n- date: (\d{4}-\d{2}-\d{2})$", re.M)


def version_problems(versions: list[git.FileVersion], current: bytes) -> list[str]:
    """Each version (every commit of the history, merges included, in commit order) must be a prefix of
    the next one and of the current file; an entry must not be dated after the commit that first held it."""
    problems: list[str] = []
    dated: set[str] = set()
    for n, version in enumerate(versions):
        label = f"{DEVIATIONS} of commit {version.commit[:7]} ({version.date[:10]})"
        nxt = versions[n + 1] if n + 1 < len(versions) else None
        if not current.startswith(version.data.rstrip(b"\n")):
            problems.append(
                f"{label} was edited or removed later, not appended to: the current file does "
                "not start with it"
            )
        elif nxt is not None and not nxt.data.startswith(version.data.rstrip(b"\n")):
            problems.append(f"{label} is not a prefix of the next version (commit {nxt.commit[:7]})")
        commit_day = version.date[:10]  # the committer's own calendar day
        for m in _ENTRY_DATE.finditer(version.data.decode("utf-8", errors="replace")):
            if m.group(1) not in dated and m.group(2) > commit_day:
                problems.append(
                    f"{label}: {m.group(1)} is dated {m.group(2)}, after the commit that added "
                    f"it ({commit_day})"
                )
            dated.add(m.group(1))
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
    problems += version_problems(versions, current)
    entries = sum(1 for line in current.decode("utf-8").splitlines() if _HEADING.match(line))
    if problems:
        return Row(3, check, "FAIL", problems[0], tuple(problems))
    return Row(
        3,
        check,
        "OK",
        f"{entries} entries, every plan section exists; {len(versions)} versions in "
        "the history (merges included), each a prefix of the next and of the current file; no entry "
        "dated after its commit",
    )


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
