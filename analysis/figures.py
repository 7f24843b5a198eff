"""One figure per stage (plan section "Quality"), two panels side by side.

Left: each run's nDCG@10 with its own 95 % bootstrap interval (the plan's per-run intervals, as in the
tables). Right (issue 21): each reranked run's *paired* difference in nDCG@10 against the first stage, with
the 95 % percentile interval of the paired bootstrap (the same 10,000 resamples over queries and seed as every
interval, :func:`analysis.resampling.bootstrap_intervals` on the per-query differences), and the Holm verdict
of the family against the first stage as the marker. Per-run intervals overlap even where the paired test is
clearly significant; the right panel shows what the test says.

Matplotlib's Agg backend, no timestamps in the PNG metadata, so a rerun writes the same file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from analysis.resampling import bootstrap_intervals
from analysis.study import RunResult, StageResult, run_label

__all__ = ["stage_figure"]

_COLOURS = {20: "#4c72b0", 50: "#55a868", 100: "#c44e52"}
# Holm verdict against the first stage -> (marker, filled); anything else (not rated) is an "x"
VERDICT_MARKERS = {
    "clearly better": ("^", True),
    "measurably better": ("^", False),
    "on par": ("o", False),
    "measurably worse": ("v", False),
    "clearly worse": ("v", True),
}


def paired_differences_vs_first(stage: StageResult) -> list[dict[str, object]]:
    """Per reranked run: mean paired nDCG@10 difference to the first stage, its paired bootstrap interval
    (points) and the Holm verdict of the vs-first-stage family."""
    verdicts: dict[tuple[str | None, int | None], str] = {}
    for fam in stage.families:
        if fam["id"].rsplit("/", 1)[1] == "vs-first-stage":
            for c in fam["comparisons"]:
                verdicts[(c["model"], c["depth"])] = c["wording"]
    runs = stage.runs
    if not runs:
        return []
    base = stage.first_stage.per_query["ndcg@10"]
    diffs = np.column_stack([r.per_query["ndcg@10"] - base for r in runs])
    intervals = bootstrap_intervals(diffs)
    return [
        {"run": r, "mean": 100 * float(diffs[:, i].mean()), "low": 100 * float(intervals[i][0]),
         "high": 100 * float(intervals[i][1]), "verdict": verdicts.get((r.model, r.depth), "not rated")}
        for i, r in enumerate(runs)
    ]


def _difference_panel(ax: Axes, stage: StageResult, runs: list[RunResult]) -> None:
    rows = {id(d["run"]): d for d in paired_differences_vs_first(stage)}
    # one errorbar call per colour and one marker call per (colour, marker, filling): a call per run cost
    # most of the panel's time on a full study (issue 34); the points, colours and markers are the same
    bars: dict[str, list[tuple[float, float, float, float]]] = {}
    points: dict[tuple[str, str, bool], list[tuple[float, float]]] = {}
    seen: set[str] = set()
    for i, r in enumerate(runs):
        d = rows.get(id(r))
        if d is None:
            continue
        y = float(len(runs) - 1 - i)
        colour = _COLOURS.get(r.depth or 0, "#8172b2")
        verdict = str(d["verdict"])
        marker, filled = VERDICT_MARKERS.get(verdict, ("x", True))
        mean, low, high = float(d["mean"]), float(d["low"]), float(d["high"])  # type: ignore[arg-type]
        bars.setdefault(colour, []).append((mean, y, mean - low, high - mean))
        points.setdefault((colour, marker, filled), []).append((mean, y))
        seen.add(verdict)
    for colour, b in bars.items():
        a = np.array(b)
        ax.errorbar(a[:, 0], a[:, 1], xerr=a[:, 2:].T, fmt="none", ecolor=colour, capsize=2)
    for (colour, marker, filled), pts in points.items():
        a = np.array(pts)
        ax.plot(a[:, 0], a[:, 1], marker=marker, ls="", ms=6, color=colour, mfc=colour if filled else "white")
    ax.axvline(0.0, color="#999999", ls="--", lw=0.8)
    ax.set_yticks([])  # the same rows as the left panel, whose labels name them
    ax.set_ylim(-0.5, len(runs) - 0.5)
    ax.set_xlabel("paired Δ nDCG@10 vs first stage (points),\npaired bootstrap 95 % interval", fontsize=8)
    ax.set_title("marker = Holm verdict vs first stage", fontsize=8, y=1.0)  # y: no automatic placement
    ax.grid(axis="x", alpha=0.3)
    if seen:  # one grey entry per verdict shown (colour = depth, as in the left panel)
        # lazy: matplotlib is heavy; only when a figure is drawn
        from matplotlib.lines import Line2D

        order = [*VERDICT_MARKERS, *sorted(seen - set(VERDICT_MARKERS))]
        handles = [Line2D([], [], color="#555555", ls="", ms=5, marker=VERDICT_MARKERS.get(v, ("x", True))[0],
                          mfc="#555555" if VERDICT_MARKERS.get(v, ("x", True))[1] else "white", label=v)
                   for v in order if v in seen]  # fmt: skip
        ax.legend(handles=handles, fontsize=6, loc="best", frameon=False)


def stage_figure(stage: StageResult, path: Path, flags: Mapping[str, str],
                 stage_flags: Mapping[str, str] | None = None) -> Path:
    sf = stage_flags or {}
    runs = [stage.first_stage, *stage.runs]
    height = 1.4 + 0.22 * len(runs)
    width = 11.0
    # a bare Figure on the Agg canvas: no pyplot (its import and figure manager), nothing global to close
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    ax, dax = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.1, 1.0]})
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
    # the run labels as plain text beside each row, not as y ticks: a tick is three lines and two texts
    # (28 rows: most of a figure's time went on creating and measuring ticks); no tick marks on y
    ax.set_yticks([])
    names = ax.get_yaxis_transform()  # x in axes units, y in data units
    for i, r in enumerate(reversed(runs)):
        ax.text(-0.01, i, run_label(r, flags, sf), transform=names, ha="right", va="center", fontsize=7)
    ax.set_ylim(-0.5, len(runs) - 0.5)
    ax.set_xlabel("nDCG@10 (points) with 95 % bootstrap interval")
    ax.set_title(f"{stage.stage}: rerankers against the first stage", fontsize=9, y=1.0)
    ax.grid(axis="x", alpha=0.3)
    _difference_panel(dax, stage, runs)
    # fixed margins in inches instead of tight_layout(), which renders the whole figure once more
    # (about half of the report's figure time); the labels are at most ~25 characters at 7 pt
    fig.subplots_adjust(left=1.55 / width, right=1 - 0.15 / width, bottom=0.65 / height,
                        top=1 - 0.3 / height, wspace=0.08)
    path.parent.mkdir(parents=True, exist_ok=True)
    # zlib level 1: a quarter of level 6's encoding time for a somewhat larger file (same pixels)
    fig.savefig(path, format="png", metadata={"Software": None}, pil_kwargs={"compress_level": 1})
    return path
