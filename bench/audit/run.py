"""``bench audit``: every reviewer's check in one table, no GPU, no network (plan section "Reproducibility
and licences"). Rows in order: 1 plan commit, 2 timestamps, 3 DEVIATIONS.md, 4 datasets.lock, 5 results
recomputed, 6 manifests, 7 ids and numbers only, 8 licences, 9 reranked runs reorder their first stage's
candidates (added last, so that rows 1-8 keep their numbers), 10 results written by the analysis code on
record."""

from __future__ import annotations

from pathlib import Path

from bench.audit.analysiscode import analysis_code_row
from bench.audit.committed import datasets_row, ids_only_row, manifests_row, results_row
from bench.audit.history import deviations_row, history_problem, licences_row, plan_row, timestamps_row
from bench.audit.reorder import reorder_row
from bench.audit.rows import Row


def audit(root: Path, *, qrels: Path | None = None, header_file: Path | None = None) -> list[Row]:
    """The ten rows for the checkout at ``root``."""
    blocked = history_problem(root)
    return [
        plan_row(root, blocked),
        timestamps_row(root, blocked, header_file),
        deviations_row(root, blocked),
        datasets_row(root),
        results_row(root, qrels),
        manifests_row(root, blocked),
        ids_only_row(root),
        licences_row(root),
        reorder_row(root),
        analysis_code_row(root, blocked),
    ]
