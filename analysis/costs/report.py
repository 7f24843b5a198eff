"""The costs section's hook into ``analysis report``: compute first (bad input raises before anything is
written), then write ``costs.json`` and the decision figures, and hand the Markdown lines back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.core.atomic import write_json_atomic
from analysis.costs.markdown import costs_markdown
from analysis.costs.section import CostInputs, build_costs
from analysis.figures.costs import decision_figure
from analysis.inputs.trec import read_qrels

if TYPE_CHECKING:
    from analysis.reporting.study import StageResult

__all__ = ["MissingCostInputs", "compute_costs", "write_costs"]

COSTS_FILE = "costs.json"


class MissingCostInputs(ValueError):
    """Raised after everything was written when a price (or rate, tokens) is missing and not allowed."""


def compute_costs(
    quality: Mapping[str, Mapping[str, Any]],
    stages: Sequence[StageResult],
    qrels_path: Path,
    inputs: CostInputs,
) -> dict[str, Any]:
    """The costs record from the report's quality records and the stages it read (each run's Hit@k/Recall@k
    curves, kept from that read: no run file is read again)."""
    curves = {r.path: r.curves for s in stages for r in (s.first_stage, *s.runs) if r.curves is not None}
    return build_costs(quality, curves, read_qrels(qrels_path), inputs)


def write_costs(
    costs: Mapping[str, Any], quality: Mapping[str, Mapping[str, Any]], out_dir: Path, *, figures: bool
) -> list[str]:
    """Write ``<out>/costs.json`` and ``<out>/figures/costs-<stage>.png``; returns the report's lines."""
    write_json_atomic(out_dir / COSTS_FILE, costs)
    names: list[str] = []
    if figures:
        for stage, record in sorted(quality.items()):
            if not record["runs"]:  # a reference stage without rerankers: nothing to decide between
                continue
            rel = f"figures/costs-{stage}.png"
            options = [o for o in costs["options"] if o["stage"] == stage]
            decision_figure(stage, options, record["first_stage"]["means"]["ndcg@10"], out_dir / rel)
            names.append(rel)
    return costs_markdown(costs, figures=names)


def check_missing(costs: Mapping[str, Any]) -> None:
    if costs["missing"] and not costs["allow_missing"]:
        raise MissingCostInputs(
            f"costs: {len(costs['missing'])} input(s) missing ({'; '.join(costs['missing'][:3])}"
            f"{'; ...' if len(costs['missing']) > 3 else ''}); the cells say 'price missing' and costs.json "
            "lists them. Fix: enter the prices in the prices file with date and source (or run the missing "
            "measurement), or pass --allow-missing (recorded in costs.json)"
        )
