"""Run files from the journal (plan sections "Quality" and "Reproducibility").

``<runs>/<stage>/<model>@<k>.trec``, tag ``<stage>/<model>@<k>``, written by
``analysis.inputs.trec.write_run``
(full precision, atomic) from the journal's records alone, ranked by ``analysis.stats.ranking.rank_by_score``
through ``bench.quality.depths.ranking_at_depth`` (top k reranked, then the first-stage tail). They are a
pure function of the journal (and the frozen candidates), so a resumed study writes the same bytes as an
uninterrupted one. A query whose call failed (an error record) is left out of the run and counts as 0 in
every metric; a (stage, model) with unscored queries is not written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analysis.inputs.trec import write_run
from bench.core.journal import Journal
from bench.quality.candidates import Candidates
from bench.quality.depths import ranking_at_depth, source_depth
from bench.quality.phase import PhaseSpec


@dataclass(frozen=True)
class RunFileInfo:
    stage: str
    model: str
    depth: int
    path: Path | None  # None: every call failed, no file
    queries: int
    errors: int


def run_path(runs_dir: Path, stage: str, model: str, k: int) -> Path:
    return runs_dir / stage / f"{model}@{k}.trec"


def write_runs(
    journal: Journal, candidates: Candidates, spec: PhaseSpec, runs_dir: Path
) -> list[RunFileInfo]:
    """Write every complete (stage, model, depth) run of ``spec``; returns what was written."""
    written: list[RunFileInfo] = []
    for stage in spec.stages:
        qids = spec.qids(candidates, stage)
        for model in spec.models:
            per_depth = model in spec.per_depth
            for k in spec.depths:
                src = source_depth(k, per_depth)
                recs = {q: r for q in qids if (r := journal.get((stage, model, src, q))) is not None}
                if len(recs) < len(qids):
                    continue
                run = {
                    q: ranking_at_depth(candidates.lists[stage][q], r["scores"], k)
                    for q, r in recs.items()
                    if r["status"] == "ok"
                }
                errors = len(recs) - len(run)
                if not run:  # every call failed: no valid run file exists; reported by the caller
                    written.append(RunFileInfo(stage, model, k, None, 0, errors))
                    continue
                path = run_path(runs_dir, stage, model, k)
                path.parent.mkdir(parents=True, exist_ok=True)
                write_run(path, run, tag=f"{stage}/{model}@{k}")
                written.append(RunFileInfo(stage, model, k, path, len(run), errors))
    return written


def pointwise_consistency(journal: Journal, spec: PhaseSpec) -> dict[str, float]:
    """For models called at several depths although pointwise (rehearsal timing calls): the largest
    absolute score difference of the same candidate between a depth-k call and the depth-100 call.
    0.0 means the depth-k runs derived from depth 100 equal the runs of separate calls."""
    worst: dict[str, float] = {}
    full: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    for r in journal:
        if r["status"] == "ok" and r["depth"] == max(spec.depths):
            full[(r["stage"], r["model"], r["qid"])] = r
    for r in journal:
        ref = full.get((r["stage"], r["model"], r["qid"]))
        if r["status"] != "ok" or ref is None or r["model"] in spec.per_depth:
            continue
        n = len(r["scores"])
        diff = float(np.max(np.abs(np.subtract(r["scores"], ref["scores"][:n])))) if n else 0.0
        worst[r["model"]] = max(worst.get(r["model"], 0.0), diff)
    return worst
