"""One figure per stage: nDCG@10 with 95 % bootstrap intervals (plan section "Quality").

Matplotlib's Agg backend, no timestamps in the PNG metadata, so a rerun writes the same file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from analysis.study import StageResult

__all__ = ["stage_figure"]

_COLOURS = {20: "#4c72b0", 50: "#55a868", 100: "#c44e52"}


def stage_figure(stage: StageResult, path: Path, flags: Mapping[str, str],
                 stage_flags: Mapping[str, str] | None = None) -> Path:
    from analysis.report import run_label

    sf = stage_flags or {}
    runs = [stage.first_stage, *stage.runs]
    height = 1.2 + 0.22 * len(runs)
    fig, ax = plt.subplots(figsize=(7.5, height), dpi=100)
    try:
        # one errorbar call per colour (a call per run cost most of the figure's time on a full study)
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(runs):
            colour = "#555555" if r.depth is None else _COLOURS.get(r.depth, "#8172b2")
            groups.setdefault(colour, []).append(i)
        for colour, rows in groups.items():
            mean = np.array([100 * runs[i].means["ndcg@10"] for i in rows])
            lo = np.array([100 * runs[i].intervals["ndcg@10"][0] for i in rows])
            hi = np.array([100 * runs[i].intervals["ndcg@10"][1] for i in rows])
            y = np.array([len(runs) - 1 - i for i in rows], dtype=float)
            xerr = np.vstack([mean - lo, hi - mean])
            ax.errorbar(mean, y, xerr=xerr, fmt="o", color=colour, capsize=2, ms=4)
        ax.axvline(100 * stage.first_stage.means["ndcg@10"], color="#999999", ls="--", lw=0.8)
        ax.set_yticks(range(len(runs)))
        ax.set_yticklabels([run_label(r, flags, sf) for r in reversed(runs)], fontsize=7)
        ax.set_xlabel("nDCG@10 (points) with 95 % bootstrap interval")
        ax.set_title(f"{stage.stage}: rerankers against the first stage", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
        # fixed margins in inches instead of tight_layout(), which renders the whole figure once more
        # (about half of the report's figure time); the labels are at most ~25 characters at 7 pt
        fig.subplots_adjust(left=1.55 / 7.5, right=1 - 0.15 / 7.5, bottom=0.5 / height, top=1 - 0.3 / height)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="png", metadata={"Software": None})
    finally:
        plt.close(fig)
    return path
