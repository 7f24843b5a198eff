"""Audit row 10: the analysis code on record (plan section "Reproducibility and licences").

Every file ``analysis report`` writes records the code that wrote it (``analysis.reporting.codeinfo``: commit,
dirty flag, digest of ``analysis/`` and of the locked packages it imports). The row checks that

- every committed report file carries a well-formed record, all the same;
- the recorded digests are those of ``analysis/`` (and ``uv.lock``) at the commit that last committed the runs
  (``git log -1 -- runs``), or at a later commit that changed ``analysis/`` (the report rewritten later);
- every change to ``analysis/`` since the analysis code was stamped (``timestamps/analysis-code.json``,
  runbook step 1; else since the runs' commit) is named, by its path, in DEVIATIONS.md;
- the stamp file was committed before the first run.

Numbered 10, after the reordering row, so that rows 1-9 keep their numbers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import analysis.reporting.report as report_mod
from analysis.reporting.codeinfo import KEY, packages_digest, read_record, tree_digest, well_formed
from bench.audit.committed import RESULTS, RUNS, STUDY_JSON, study_files, tracked
from bench.audit.rows import Row
from bench.core.hints import analysis_command
from bench.integrity import git

NUMBER = 10
CHECK = "results written by the analysis code on record"
STAMP_FILE = "timestamps/analysis-code.json"
STUDY = f"{RESULTS}/{STUDY_JSON}"
RUN_GLOB = f":(glob){RUNS}/**/*.trec"


_DIGESTS: dict[str, dict[str, str]] = {}  # commit id -> code_at's digests (an id names one tree)


def code_at(root: Path, commit: str) -> dict[str, str]:
    """The two digests of the analysis code and its locked packages in ``commit``'s tree; a full commit id's
    are kept for the process (the audit asks for one commit more than once, a clone for the same ids)."""
    if commit in _DIGESTS:
        return dict(_DIGESTS[commit])
    names = git.run_git(root, "ls-tree", "-r", "--name-only", "-z", commit, "--", "analysis").decode()
    files = git.show_files(root, commit, [n for n in names.split("\0") if n.endswith(".py")])
    lock = git.show_file(root, commit, "uv.lock") if "uv.lock" in git.commit_files(root, commit) else None
    digests = {"analysis_digest": tree_digest(files), "packages_digest": packages_digest(files, lock)}
    if re.fullmatch(r"[0-9a-f]{40}", commit):
        _DIGESTS[commit] = dict(digests)
    return digests


def report_files(root: Path) -> list[str]:
    """The committed files under results/ that ``analysis report`` writes (its owned entries)."""
    owned = {*report_mod.REPORT_ENTRIES, *(e for sec in report_mod.SECTIONS for e in sec.entries)}
    files = study_files(tracked(root, RESULTS))
    return [f for f in files if f.removeprefix(f"{RESULTS}/").split("/")[0] in owned]


def _log(root: Path, *args: str) -> list[str]:
    return git.run_git(root, "log", "--format=%H", *args).decode().split()


def record_problems(root: Path, files: list[str]) -> tuple[dict[str, Any] | None, list[str]]:
    """study.json's record, and every report file whose record is missing, malformed or another one."""
    records = {rel: read_record(rel, (root / rel).read_bytes()) for rel in files if (root / rel).is_file()}
    main = records.get(STUDY)
    fix = analysis_command("report", "--runs", "runs", "--qrels", "QRELS", "--out", "results")
    problems = [
        f"{rel}: no well-formed {KEY} record (commit, dirty, analysis and packages digests): written "
        f"by other code or edited; rerun `{fix}` and commit it"
        for rel, rec in records.items()
        if not well_formed(rec)
    ]
    problems += [
        f"{rel}: its {KEY} record differs from {STUDY}'s: the results come from two runs of the report"
        for rel, rec in records.items()
        if well_formed(rec) and well_formed(main) and rec != main
    ]
    return (main if well_formed(main) else None), problems


def stamp_commit(root: Path) -> tuple[str | None, list[str]]:
    """The commit that added the stamped analysis record (runbook step 1), and its problems: committed after
    the first run, or a digest that is not that commit's analysis code."""
    if STAMP_FILE not in git.commit_files(root, "HEAD"):
        return None, []
    added = _log(root, "-1", "--diff-filter=A", "--", STAMP_FILE)[0]  # the add of the file as it is now
    problems = []
    first_run = _log(root, "--reverse", "--diff-filter=A", "--", RUN_GLOB)[:1]
    after = first_run and git.run_git(root, "rev-list", f"{first_run[0]}..{added}").strip()
    if first_run and (added == first_run[0] or after):
        problems.append(
            f"{STAMP_FILE} was committed in {added[:7]}, not before the first run "
            f"({first_run[0][:7]}): the analysis code was not on record before the "
            "data"
        )
    try:
        stamped = str(json.loads(git.show_file(root, added, STAMP_FILE))[KEY]["analysis_digest"])
    except (ValueError, KeyError, TypeError):
        return added, [f"{STAMP_FILE}: not the record `analysis code-digest` writes; write it again"]
    actual = code_at(root, added)["analysis_digest"]
    if stamped != actual:
        problems.append(
            f"{STAMP_FILE} records analysis digest {stamped[:12]}..., but analysis/ in its "
            f"commit {added[:7]} has {actual[:12]}...: stamp the code that is "
            "committed"
        )
    return added, problems


def digest_problem(root: Path, record: dict[str, Any], runs_commit: str) -> str | None:
    """The recorded digests must be those of the runs' commit, or of a later commit that changed analysis/ or
    uv.lock (the report rewritten later: row 10's next check wants those changes named)."""
    later = _log(root, f"{runs_commit}..HEAD", "--", "analysis", "uv.lock")
    digests = {c: code_at(root, c) for c in [runs_commit, *reversed(later)]}
    match = next((c for c, d in digests.items() if d["analysis_digest"] == record["analysis_digest"]), None)
    if match is None:
        return (
            f"{STUDY}: analysis digest {record['analysis_digest'][:12]}... is not that of analysis/ in "
            f"the runs' commit {runs_commit[:7]} ({digests[runs_commit]['analysis_digest'][:12]}...) or "
            "any later commit: the results were written by analysis code that is not on record; rerun "
            "`analysis report` on a clean checkout and commit its output"
        )
    if digests[match]["packages_digest"] != record["packages_digest"]:
        return (
            f"{STUDY}: packages digest {record['packages_digest'][:12]}... is not that of the locked "
            f"packages analysis/ imports in commit {match[:7]}: the results were written with other "
            "package versions; rerun `analysis report` after `uv sync --locked`"
        )
    return None


def unnamed_changes(root: Path, base: str) -> list[str]:
    """Files of analysis/ changed between ``base`` and HEAD that DEVIATIONS.md does not name."""
    changed = git.run_git(root, "diff", "--name-only", "-z", base, "HEAD", "--", "analysis").decode()
    path = root / "DEVIATIONS.md"
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    return [f for f in changed.split("\0") if f and f not in text]


def analysis_code_row(root: Path, blocked: str | None) -> Row:
    if blocked:
        return Row(NUMBER, CHECK, "FAIL", blocked)
    files = report_files(root)
    runs = _log(root, "-1", "--", RUN_GLOB)
    stamp, problems = stamp_commit(root)
    if STUDY not in files or not runs:
        if problems:
            return Row(NUMBER, CHECK, "FAIL", problems[0], tuple(problems))
        on_record = f"stamped in {stamp[:7]}" if stamp else f"not yet stamped ({STAMP_FILE}: runbook step 1)"
        return Row(
            NUMBER, CHECK, "NOT YET", f"no study committed yet (runs and {STUDY}); analysis code {on_record}"
        )
    record, more = record_problems(root, files)
    problems += more
    if record is not None:
        problem = digest_problem(root, record, runs[0])
        problems += [problem] if problem else []
    base = stamp or runs[0]
    unnamed = unnamed_changes(root, base)
    if unnamed:
        since = "it was stamped" if stamp else "the runs were committed"
        problems.append(
            f"analysis/ changed after {since} ({base[:7]}) in {len(unnamed)} file(s) no "
            f"DEVIATIONS.md entry names: {', '.join(unnamed)}; name each in an entry or restore "
            "it"
        )
    if problems:
        first = f"{len(problems)} problem(s); first: {problems[0]}"
        return Row(NUMBER, CHECK, "FAIL", first, tuple(problems))
    assert record is not None
    what = f"{len(files)} report files record analysis code {record['analysis_digest'][:12]}..."
    if stamp is None:
        return Row(
            NUMBER,
            CHECK,
            "NOT YET",
            f"{what}, that of the runs' commit {runs[0][:7]}; the analysis "
            f"code is not stamped ({STAMP_FILE}: runbook step 1)",
        )
    return Row(
        NUMBER,
        CHECK,
        "OK",
        f"{what}, that of the runs' commit {runs[0][:7]}; stamped in "
        f"{stamp[:7]}, before the first run; every later change to analysis/ named in "
        "DEVIATIONS.md",
    )
