"""Accuracy in the same run (after MLPerf: outputs of the timing run equal the accuracy run's).

The scores an adapter returned while it was timed are compared, per query, with the scores of the quality
run of the same model for the same candidates: Spearman >= 0.99 per query (the plan's equality rule,
``bench.equality.spearman``; the same ranking is expected). Reference: ``runs/<stage>/<model>@<k>.trec``
if it exists (listwise models, per-depth API runs), else ``@100`` (pointwise models: the first k candidates'
scores are the same scores). A query whose candidates are missing from the reference, or whose Spearman is
below the threshold or undefined (a constant list that is not identical), fails; any failure marks the block.
Without a reference file the status is ``not-checked`` with the reason, and the block is marked too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from analysis.inputs.trec import TrecFormatError, read_run
from analysis.latency import Accuracy
from bench.core.errors import BenchError
from bench.core.plan import EQUALITY_MIN_SPEARMAN, QUALITY_DEPTH
from bench.equality.spearman import spearman

Observed = Mapping[str, tuple[Sequence[str], np.ndarray]]  # qid -> (docids, scores) of the timed calls


def reference_path(runs_dir: Path, stage: str, model: str, k: int) -> Path | None:
    for depth in (k, QUALITY_DEPTH):
        path = runs_dir / stage / f"{model}@{depth}.trec"
        if path.is_file():
            return path
    return None


def read_reference(path: Path) -> dict[str, dict[str, float]]:
    try:
        run = read_run(path, allow_unknown_queries=True)
    except TrecFormatError as exc:
        raise BenchError(f"accuracy reference {exc}") from exc
    return {q: dict(rows) for q, rows in run.items()}


def check_accuracy(
    observed: Observed,
    reference: Mapping[str, Mapping[str, float]] | None,
    *,
    label: str | None,
    why_missing: str = "no quality run of this model",
    threshold: float = EQUALITY_MIN_SPEARMAN,
) -> Accuracy:
    if reference is None:
        return Accuracy("not-checked", None, threshold, 0, None, (), why_missing)
    failed: list[str] = []
    rhos: list[float] = []
    for qid, (docids, scores) in observed.items():
        ref = reference.get(qid, {})
        if any(d not in ref for d in docids):
            failed.append(qid)
            continue
        theirs = np.asarray([ref[d] for d in docids], dtype=np.float64)
        ours = np.asarray(scores, dtype=np.float64)
        if len(docids) < 2:
            continue
        rho = spearman(ours, theirs)
        if np.isnan(rho):
            same = np.array_equal(np.argsort(ours, kind="stable"), np.argsort(theirs, kind="stable"))
            rho = 1.0 if same else float("nan")
        if np.isnan(rho) or rho < threshold:
            failed.append(qid)
        if not np.isnan(rho):
            rhos.append(rho)
    status = "mismatch" if failed else "passed"
    reason = None
    if failed:
        reason = f"{len(failed)} of {len(observed)} queries below Spearman {threshold} or missing in {label}"
    return Accuracy(
        status, label, threshold, len(observed), min(rhos) if rhos else None, tuple(failed), reason
    )


def accuracy_mark(acc: Accuracy) -> str | None:
    if acc.status == "passed":
        return None
    if acc.status == "not-checked":
        return f"accuracy not checked: {acc.reason}"
    return f"accuracy mismatch: {acc.reason}"
