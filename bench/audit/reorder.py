"""Audit row 9: every committed reranked run reorders its stage's committed first-stage candidates (plan
section "Quality": every reranker sees the same frozen top 100; "only the first k candidates are reordered").

Walks every run folder a phase commits (``bench.core.paths.RUN_FOLDERS``: ``runs/`` with the int8 variant's
run, the pitfalls experiment, the determinism rerun, both data-type check sessions): each ``<folder>/<stage>/
<run id>@<k>.trec`` that git tracks is checked against ``runs/first-stage/<stage>.trec`` with
``analysis.inputs.reordering`` (the check ``analysis report`` refuses a run by). Numbered 9, after the
licences, so that the numbers of rows 1-8 stay what the docs say.
"""

from __future__ import annotations

import re
from pathlib import Path

from analysis.inputs.reordering import CandidateIndex, check_reordering, read_ids
from analysis.inputs.trec import TrecFormatError
from bench.audit.committed import RUNS, non_regular_files, tracked
from bench.audit.rows import Row
from bench.core.paths import RUN_FOLDERS

NUMBER = 9
CHECK = "reranked runs reorder their first stage's candidates"
FIRST_STAGE = f"{RUNS}/first-stage"
_NAME = re.compile(r"^(?P<model>[^/@]+)@(?P<depth>[1-9][0-9]*)\.trec$")


def reranked_runs(root: Path) -> list[tuple[str, str, int]]:
    """(run file, stage, depth) of every committed file in a run folder's stage folders (sorted); a file
    whose name carries no depth gets depth 0 (named as a problem by the row)."""
    out = []
    for folder in sorted(set(RUN_FOLDERS.values())):
        for rel in tracked(root, folder):
            parts = rel.removeprefix(f"{folder}/").split("/")
            if len(parts) != 2 or parts[0] == "first-stage" or not rel.endswith(".trec"):
                continue  # README/LICENSE, first stages, stray files: rows 7 and 5 name those
            m = _NAME.match(parts[1])
            out.append((rel, parts[0], int(m["depth"]) if m else 0))
    return sorted(set(out))


def reorder_row(root: Path) -> Row:
    runs = reranked_runs(root)
    if not runs:
        return Row(NUMBER, CHECK, "NOT YET", "no reranked run committed yet")
    firsts: dict[str, CandidateIndex | str] = {}
    details: list[str] = []
    failed = 0
    links = non_regular_files(root)  # a committed link cannot be checked here: its own message (row 7's)
    for rel, stage, depth in runs:
        problem = None
        if rel in links or f"{FIRST_STAGE}/{stage}.trec" in links:
            problem = links.get(rel) or links[f"{FIRST_STAGE}/{stage}.trec"]
        elif depth == 0:
            problem = f"{rel}: not named <run id>@<k>.trec, so its depth k is unknown; rename it"
        else:
            first = firsts.get(stage)
            if first is None:
                first = firsts[stage] = _index(root, stage)
            if isinstance(first, str):
                problem = f"{rel}: {first}"
            else:
                try:
                    check_reordering(
                        first,
                        read_ids(root / rel),
                        depth,
                        run_path=root / rel,
                        shown_as=rel,
                        first_name=f"{FIRST_STAGE}/{stage}.trec",
                    )
                except (TrecFormatError, OSError) as exc:
                    problem = str(exc)
        failed += problem is not None
        details.append(f"FAIL {problem}" if problem else f"OK   {rel}")
    if failed:
        first_fail = next(d for d in details if d.startswith("FAIL"))
        return Row(
            NUMBER,
            CHECK,
            "FAIL",
            f"{failed} of {len(runs)} run files break it; first: {first_fail.removeprefix('FAIL ')}",
            tuple(details),
        )
    return Row(
        NUMBER,
        CHECK,
        "OK",
        f"{len(runs)} reranked run files hold exactly their first stage's "
        "candidates, only the top k reordered",
        tuple(details),
    )


def _index(root: Path, stage: str) -> CandidateIndex | str:
    """The committed first stage of ``stage``, indexed; or why it cannot be."""
    rel = f"{FIRST_STAGE}/{stage}.trec"
    if rel not in tracked(root, rel):
        return f"its first-stage run {rel} is not committed; commit it (bench first-stage {stage})"
    try:
        return CandidateIndex.of(read_ids(root / rel))
    except (TrecFormatError, OSError) as exc:
        return f"its first-stage run cannot be read: {exc}"
