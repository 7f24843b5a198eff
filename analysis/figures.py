"""One figure per stage (plan section "Quality"), two panels side by side.

Left: each run's nDCG@10 with its own 95 % bootstrap interval (the plan's per-run intervals, as in the
tables). Right: each reranked run's *paired* difference in nDCG@10 against the first stage, with
the 95 % percentile interval of the paired bootstrap (the same 10,000 resamples over queries and seed as every
interval, :func:`analysis.stats.resampling.bootstrap_intervals` on the per-query differences), and the Holm
verdict of the family against the first stage as the marker. Per-run intervals overlap even where the paired
test is clearly significant; the right panel shows what the test says.

Drawn with :mod:`analysis.raster` (Pillow; no matplotlib, whose import and artists were most of a cold
full-size report): no metadata in the PNG, so a rerun writes the same file. The layout is the one
the matplotlib version had (11 inches wide, 1.4 + 0.22 inches per row, 100 dpi), so the size is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from analysis.raster import Canvas, Panel, nice_ticks, pt, tick_label
from analysis.reporting.study import RunResult, StageResult, run_label
from analysis.stats.resampling import bootstrap_intervals

__all__ = ["VERDICT_MARKERS", "figure_size", "paired_differences_vs_first", "stage_figure"]

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
        {
            "run": r,
            "mean": 100 * float(diffs[:, i].mean()),
            "low": 100 * float(intervals[i][0]),
            "high": 100 * float(intervals[i][1]),
            "verdict": verdicts.get((r.model, r.depth), "not rated"),
        }
        for i, r in enumerate(runs)
    ]


_GRID = "#e7e7e7"  # matplotlib's grid colour #b0b0b0 at alpha 0.3 on white
_LINE = "#999999"
_GREY = "#555555"
# the figure's layout in inches (the matplotlib version's): margins, the two panels' widths 1.1 : 1.0, a gap
# of 0.08 of their mean width
_WIDTH, _LEFT, _RIGHT, _BOTTOM, _TOP, _GAP = 11.0, 1.55, 0.15, 0.65, 0.3, 0.08


def figure_size(rows: int) -> tuple[int, int]:
    """Pixels (width, height) of a stage figure with ``rows`` runs (the first stage included)."""
    return round(_WIDTH * 100), round((1.4 + 0.22 * rows) * 100)


def _panels(width: int, height: int) -> tuple[Panel, Panel]:
    left, right = _LEFT * 100, width - _RIGHT * 100
    top, bottom = _TOP * 100, height - _BOTTOM * 100
    both = (right - left) / (1 + _GAP / 2)
    w1, w2 = both * 1.1 / 2.1, both * 1.0 / 2.1
    return Panel(left, top, left + w1, bottom), Panel(right - w2, top, right, bottom)


def _x_range(panel: Panel, values: list[float]) -> None:
    """matplotlib's default: the data range with a margin of 5 % on each side."""
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.05 if hi > lo else max(abs(lo) * 0.05, 0.5)
    panel.xmin, panel.xmax = lo - pad, hi + pad


def _axes(canvas: Canvas, panel: Panel, xlabel: str, xlabel_pt: float, title: str, title_pt: float) -> None:
    """Grid, frame, x ticks with labels, x label and title of one panel."""
    ticks, decimals = nice_ticks(panel.xmin, panel.xmax)
    for t in ticks:
        x = panel.x(t)
        canvas.line([(x, panel.top), (x, panel.bottom)], _GRID, 0.8)
        canvas.line([(x, panel.bottom), (x, panel.bottom + pt(3.5))], "black", 0.8)
        canvas.text(x, panel.bottom + pt(3.5) + pt(3.5), tick_label(t, decimals), 10, va="top")
    canvas.text(
        (panel.left + panel.right) / 2,
        panel.bottom + pt(3.5) + pt(3.5) + pt(10) * 1.2 + pt(4),
        xlabel,
        xlabel_pt,
        va="top",
    )
    canvas.text((panel.left + panel.right) / 2, panel.top - pt(6), title, title_pt, va="bottom")


def _errorbar(canvas: Canvas, panel: Panel, y: float, low: float, high: float, colour: str) -> None:
    py, cap = panel.y(y), pt(2)
    canvas.line([(panel.x(low), py), (panel.x(high), py)], colour, 1.5)
    for v in (low, high):
        canvas.line([(panel.x(v), py - cap), (panel.x(v), py + cap)], colour, 1.5)


def _legend(canvas: Canvas, panel: Panel, seen: set[str], points: list[tuple[float, float]]) -> None:
    """One grey entry per verdict shown, in the corner of the panel with the fewest points under it."""
    order = [*VERDICT_MARKERS, *sorted(seen - set(VERDICT_MARKERS))]
    entries = [v for v in order if v in seen]
    line_h, box_w = pt(6) * 1.5, pt(5) + 6 + max(canvas.text_width(v, 6) for v in entries)
    box_h = line_h * len(entries) + 6

    def corner(i: int) -> tuple[float, float]:
        x0 = panel.right - box_w - 6 if i % 2 == 0 else panel.left + 6
        return x0, (panel.top + 6 if i < 2 else panel.bottom - box_h - 6)

    def covered(i: int) -> int:
        x0, y0 = corner(i)
        return sum(1 for x, y in points if x0 - 4 <= x <= x0 + box_w + 4 and y0 - 4 <= y <= y0 + box_h + 4)

    x0, y0 = corner(min(range(4), key=lambda i: (covered(i), i)))
    for j, verdict in enumerate(entries):
        marker, filled = VERDICT_MARKERS.get(verdict, ("x", True))
        cy = y0 + 3 + line_h * (j + 0.5)
        canvas.marker(x0 + pt(5) / 2, cy, marker, 5, _GREY, _GREY if filled else "white")
        canvas.text(x0 + pt(5) + 6, cy, verdict, 6, ha="left")


def _difference_panel(canvas: Canvas, panel: Panel, stage: StageResult, runs: list[RunResult]) -> None:
    """Each reranked run's paired difference to the first stage with its interval, marked by its verdict."""
    rows = {id(d["run"]): d for d in paired_differences_vs_first(stage)}
    shown = [(i, r, rows[id(r)]) for i, r in enumerate(runs) if id(r) in rows]
    ends = [float(v) for _, _, d in shown for v in (d["low"], d["high"])]  # type: ignore[arg-type]
    _x_range(panel, [*ends, 0.0])
    _axes(
        canvas,
        panel,
        "paired Δ nDCG@10 vs first stage (points),\npaired bootstrap 95 % interval",
        8,
        "marker = Holm verdict vs first stage",
        8,
    )
    canvas.line([(panel.x(0.0), panel.top), (panel.x(0.0), panel.bottom)], _LINE, 0.8, dash=(3.7, 1.6))
    seen: set[str] = set()
    points: list[tuple[float, float]] = []
    for i, r, d in shown:
        y = float(len(runs) - 1 - i)
        colour = _COLOURS.get(r.depth or 0, "#8172b2")
        verdict = str(d["verdict"])
        marker, filled = VERDICT_MARKERS.get(verdict, ("x", True))
        mean = float(d["mean"])  # type: ignore[arg-type]
        _errorbar(canvas, panel, y, float(d["low"]), float(d["high"]), colour)  # type: ignore[arg-type]
        canvas.marker(panel.x(mean), panel.y(y), marker, 6, colour, colour if filled else "white")
        points.append((panel.x(mean), panel.y(y)))
        seen.add(verdict)
    canvas.rectangle(panel)
    if seen:
        _legend(canvas, panel, seen, points)


def stage_figure(
    stage: StageResult, path: Path, flags: Mapping[str, str], stage_flags: Mapping[str, str] | None = None
) -> Path:
    """The stage's figure as a PNG at ``path``: left, each run's nDCG@10 with its interval; right, the paired
    differences to the first stage (module docstring)."""
    sf = stage_flags or {}
    runs = [stage.first_stage, *stage.runs]
    width, height = figure_size(len(runs))
    canvas = Canvas(width, height)
    ax, dax = _panels(width, height)
    ax.ymin, ax.ymax = dax.ymin, dax.ymax = -0.5, len(runs) - 0.5
    first = 100 * stage.first_stage.means["ndcg@10"]
    _x_range(ax, [first, *(100 * v for r in runs for v in r.intervals["ndcg@10"])])
    _axes(
        canvas,
        ax,
        "nDCG@10 (points) with 95 % bootstrap interval",
        10,
        f"{stage.stage}: rerankers against the first stage",
        9,
    )
    canvas.line([(ax.x(first), ax.top), (ax.x(first), ax.bottom)], _LINE, 0.8, dash=(3.7, 1.6))
    for i, r in enumerate(runs):
        colour = _GREY if r.depth is None else _COLOURS.get(r.depth, "#8172b2")
        y = float(len(runs) - 1 - i)
        lo, hi = (100 * v for v in r.intervals["ndcg@10"])
        _errorbar(canvas, ax, y, lo, hi, colour)
        canvas.marker(ax.x(100 * r.means["ndcg@10"]), ax.y(y), "o", 4, colour, colour)
        canvas.text(ax.left - 0.01 * (ax.right - ax.left), ax.y(y), run_label(r, flags, sf), 7, ha="right")
    canvas.rectangle(ax)
    _difference_panel(canvas, dax, stage, runs)
    canvas.save(path)
    return path
