"""One figure per stage (plan section "Quality"), two panels side by side.

Left: each run's nDCG@10 with its own 95 % bootstrap interval (the plan's per-run intervals, as in the
tables), the first stage's value as a dashed line. Right: each reranked run's *paired* difference in nDCG@10
against the first stage with its paired bootstrap interval (computed by the report:
:func:`analysis.reporting.study.paired_differences_vs_first`), marked by the Holm verdict of the family
against the first stage. Per-run intervals overlap even where the paired test is clearly significant; the
right panel shows what the test says.

:func:`stage_numbers` collects what is drawn (points, labels, verdicts) from the report's results;
:func:`draw_stage` draws them into a Figure; :func:`stage_figure` writes the PNG. 11 inches wide, 1.4 + 0.22
inches per row, 100 dpi (:func:`figure_size`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from analysis.figures.render import canvas, save_png
from analysis.reporting.study import StageResult, run_label

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "COLOURS",
    "FIRST_STAGE_COLOUR",
    "VERDICT_MARKERS",
    "Difference",
    "Row",
    "StageFigure",
    "draw_stage",
    "figure_size",
    "stage_figure",
    "stage_numbers",
]

COLOURS: Final = {20: "#4c72b0", 50: "#55a868", 100: "#c44e52"}
OTHER_DEPTH: Final = "#8172b2"
FIRST_STAGE_COLOUR: Final = "#555555"
LINE: Final = "#999999"
# Holm verdict against the first stage -> (marker, filled); anything else (not rated) is an "x"
VERDICT_MARKERS: Final = {
    "clearly better": ("^", True),
    "measurably better": ("^", False),
    "on par": ("o", False),
    "measurably worse": ("v", False),
    "clearly worse": ("v", True),
}
UNRATED_MARKER: Final = ("x", True)
DPI: Final = 100
# the layout in inches: width, margins (left, right, bottom, top); the panels' widths 1.1 : 1.0
WIDTH, LEFT, RIGHT, BOTTOM, TOP, GAP = 11.0, 1.55, 0.15, 0.65, 0.3, 0.08


@dataclass(frozen=True)
class Row:
    """A run of the left panel, in points: its label, depth (None: the first stage), mean and interval."""

    label: str
    depth: int | None
    mean: float
    low: float
    high: float

    @property
    def colour(self) -> str:
        return FIRST_STAGE_COLOUR if self.depth is None else COLOURS.get(self.depth, OTHER_DEPTH)


@dataclass(frozen=True)
class Difference:
    """A reranked run of the right panel: its row (index into :attr:`StageFigure.rows`), the paired mean
    difference to the first stage and its interval in points, and its Holm verdict."""

    row: int
    depth: int | None
    mean: float
    low: float
    high: float
    verdict: str

    @property
    def colour(self) -> str:
        return COLOURS.get(self.depth or 0, OTHER_DEPTH)


@dataclass(frozen=True)
class StageFigure:
    """What a stage figure shows; ``rows`` top to bottom, the first stage first."""

    stage: str
    first_stage: float
    rows: tuple[Row, ...]
    differences: tuple[Difference, ...]


def stage_numbers(
    stage: StageResult,
    paired: Sequence[Mapping[str, object]],
    flags: Mapping[str, str],
    stage_flags: Mapping[str, str] | None = None,
) -> StageFigure:
    """The figure's numbers in points from the report's results: ``stage`` (means, intervals) and ``paired``
    (:func:`analysis.reporting.study.paired_differences_vs_first`, one row per reranked run)."""
    sf = stage_flags or {}
    runs = [stage.first_stage, *stage.runs]
    rows = tuple(
        Row(
            run_label(r, flags, sf),
            r.depth,
            100 * r.means["ndcg@10"],
            100 * r.intervals["ndcg@10"][0],
            100 * r.intervals["ndcg@10"][1],
        )
        for r in runs
    )
    index = {id(r): i for i, r in enumerate(runs)}
    differences = tuple(
        Difference(
            index[id(d["run"])],
            d["run"].depth,  # type: ignore[attr-defined]
            float(d["mean"]),  # type: ignore[arg-type]
            float(d["low"]),  # type: ignore[arg-type]
            float(d["high"]),  # type: ignore[arg-type]
            str(d["verdict"]),
        )
        for d in paired
    )
    return StageFigure(stage.stage, 100 * stage.first_stage.means["ndcg@10"], rows, differences)


def figure_size(rows: int) -> tuple[int, int]:
    """Pixels (width, height) of a stage figure with ``rows`` runs (the first stage included)."""
    return round(WIDTH * DPI), round((1.4 + 0.22 * rows) * DPI)


def _y(data: StageFigure, row: int) -> float:
    return float(len(data.rows) - 1 - row)


def _run_panel(ax: Axes, data: StageFigure) -> None:
    """Each run's mean and interval (one errorbar call per colour), its label as text beside the row."""
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(data.rows):
        groups.setdefault(r.colour, []).append(i)
    for colour, members in groups.items():
        means = [data.rows[i].mean for i in members]
        xerr = [
            [data.rows[i].mean - data.rows[i].low for i in members],
            [data.rows[i].high - data.rows[i].mean for i in members],
        ]
        ys = [_y(data, i) for i in members]
        ax.errorbar(means, ys, xerr=xerr, fmt="o", color=colour, capsize=2, ms=4)
    ax.axvline(data.first_stage, color=LINE, ls="--", lw=0.8)
    # the labels as plain text, not y ticks (a tick is three lines and two texts); no tick marks on y
    ax.set_yticks([])
    names = ax.get_yaxis_transform()  # x in axes units, y in data units
    for i, r in enumerate(data.rows):
        ax.text(-0.01, _y(data, i), r.label, transform=names, ha="right", va="center", fontsize=7)
    ax.set_ylim(-0.5, len(data.rows) - 0.5)
    ax.set_xlabel("nDCG@10 (points) with 95 % bootstrap interval")
    ax.set_title(f"{data.stage}: rerankers against the first stage", fontsize=9, y=1.0)
    ax.grid(axis="x", alpha=0.3)


def _difference_panel(ax: Axes, data: StageFigure) -> None:
    """Each reranked run's paired difference with its interval, the marker its verdict's."""
    # lazy: matplotlib is heavy; only when a figure is drawn
    from matplotlib.lines import Line2D

    bars: dict[str, list[Difference]] = {}
    points: dict[tuple[str, str, bool], list[Difference]] = {}
    for d in data.differences:
        marker, filled = VERDICT_MARKERS.get(d.verdict, UNRATED_MARKER)
        bars.setdefault(d.colour, []).append(d)
        points.setdefault((d.colour, marker, filled), []).append(d)
    for colour, ds in bars.items():
        xerr = [[d.mean - d.low for d in ds], [d.high - d.mean for d in ds]]
        ax.errorbar(
            [d.mean for d in ds],
            [_y(data, d.row) for d in ds],
            xerr=xerr,
            fmt="none",
            ecolor=colour,
            capsize=2,
        )
    for (colour, marker, filled), ds in points.items():
        ax.plot(
            [d.mean for d in ds],
            [_y(data, d.row) for d in ds],
            marker=marker,
            ls="",
            ms=6,
            color=colour,
            mfc=colour if filled else "white",
        )
    ax.axvline(0.0, color=LINE, ls="--", lw=0.8)
    ax.set_yticks([])  # the same rows as the left panel, whose labels name them
    ax.set_ylim(-0.5, len(data.rows) - 0.5)
    ax.set_xlabel("paired Δ nDCG@10 vs first stage (points),\npaired bootstrap 95 % interval", fontsize=8)
    ax.set_title("marker = Holm verdict vs first stage", fontsize=8, y=1.0)
    ax.grid(axis="x", alpha=0.3)
    seen = {d.verdict for d in data.differences}
    if seen:  # one grey entry per verdict shown (colour = depth, as in the left panel)
        order = [*VERDICT_MARKERS, *sorted(seen - set(VERDICT_MARKERS))]
        handles = []
        for v in (v for v in order if v in seen):
            marker, filled = VERDICT_MARKERS.get(v, UNRATED_MARKER)
            face = FIRST_STAGE_COLOUR if filled else "white"
            handles.append(
                Line2D([], [], color=FIRST_STAGE_COLOUR, ls="", ms=5, marker=marker, mfc=face, label=v)
            )
        ax.legend(handles=handles, fontsize=6, loc="best", frameon=False)


def draw_stage(fig: Figure, data: StageFigure) -> tuple[Axes, Axes]:
    """Both panels into ``fig`` (from :func:`analysis.figures.render.canvas`); returns (runs, differences)."""
    ax, dax = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.1, 1.0]})
    _run_panel(ax, data)
    _difference_panel(dax, data)
    height = figure_size(len(data.rows))[1] / DPI
    # fixed margins in inches: tight_layout would render the whole figure once more
    fig.subplots_adjust(
        left=LEFT / WIDTH, right=1 - RIGHT / WIDTH, bottom=BOTTOM / height, top=1 - TOP / height, wspace=GAP
    )
    return ax, dax


def stage_figure(data: StageFigure, path: Path) -> Path:
    """The stage's figure as a PNG at ``path``."""
    width, height = figure_size(len(data.rows))
    with canvas(width / DPI, height / DPI, DPI) as fig:
        draw_stage(fig, data)
        return save_png(fig, path)
