"""The decision figure, one per stage (PLAN.md, section "Costs"): quality against latency against money.

nDCG@10 with its 95 % bootstrap interval (y) against the p95 latency of the reranking step (x, log scale)
for every model on every machine: one panel per machine (GPU, CPU fp32, CPU int8, API) on equal axes, so
that 30-odd options stay readable; marker shape = k. Each point is labelled with its model@k and EUR per
1,000 queries; the 500 ms live-search and 2,000 ms chat budget lines and the first stage's nDCG@10 (dashed)
are in every panel. A filled marker meets the live-search budget (p95 of first stage plus reranker per query
<= 500 ms); a hollow one does not, or its first-stage time is unknown. Labels are placed greedily at the
first of a few offsets that overlaps no earlier label or marker. Drawn from the rows of ``costs.json``
(numbers the costs section computed), with the fixed settings and PNG writing of
:mod:`analysis.figures.render`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import numpy as np

from analysis.core.plan import CHAT_RERANK_P95_MS, LIVE_SEARCH_P95_MS
from analysis.figures.render import canvas, save_png

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

__all__ = ["DPI", "SIZE", "decision_figure", "draw_decision"]

COLOURS: Final = {"GPU": "#4c72b0", "CPU fp32": "#dd8452", "CPU int8": "#55a868", "API": "#8172b2"}
MARKERS: Final = {20: "o", 50: "s", 100: "^"}
FONT: Final = 6.0
SIZE: Final = (14.0, 10.0)  # inches
DPI: Final = 110
# label offsets in points (dx, dy, horizontal alignment), tried in this order
OFFSETS: Final = (
    (5, 2, "left"),
    (5, -8, "left"),
    (-5, 2, "right"),
    (-5, -8, "right"),
    (0, 7, "center"),
    (0, -14, "center"),
    (10, 12, "left"),
    (10, -18, "left"),
    (-10, 12, "right"),
    (-10, -18, "right"),
    (16, 24, "left"),
    (16, -30, "left"),
    (-16, 24, "right"),
    (-16, -30, "right"),
    (0, 30, "center"),
    (0, -38, "center"),
)
FAR: Final = 10  # offsets beyond this many points get a thin leader line
# x-axis ticks (ms), those inside the common limits are drawn
TICKS: Final = (
    1,
    2,
    5,
    10,
    20,
    50,
    100,
    200,
    500,
    1000,
    2000,
    5000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
)


def _cost(o: Mapping[str, Any]) -> str:
    v = o["eur_per_1000"]
    if v is None:
        return "price missing"
    return f"{v:.3g} €/1k" if v >= 0.001 else f"{v:.1e} €/1k"


def _label(o: Mapping[str, Any]) -> str:
    fp32 = " (unquantised quality)" if o.get("quality_note") else ""
    return f"{o['model']}{'†' if o['flagged'] else ''}@{o['k']}{fp32} · {_cost(o)}"


def _boxes_overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _place_labels(ax: Axes, points: Sequence[Mapping[str, Any]], dpi: float) -> None:
    """Greedy placement in display pixels: the offset hitting the fewest placed labels (then markers)."""
    px = dpi / 72.0
    frame = ax.get_window_extent()
    centres = [tuple(ax.transData.transform((o["latency"]["p95_ms"], 100 * o["ndcg@10"]))) for o in points]
    markers = [(x - 4 * px, y - 4 * px, x + 4 * px, y + 4 * px) for x, y in centres]
    taken: list[tuple[float, float, float, float]] = []  # placed labels
    order = sorted(range(len(points)), key=lambda i: (-centres[i][1], centres[i][0]))
    for i in order:
        text = _label(points[i])
        width, height = len(text) * FONT * 0.6 * px, FONT * 1.3 * px
        x, y = centres[i]
        best: tuple[int, float, float, str, tuple[float, float, float, float]] | None = None
        for ox, oy, align in OFFSETS:
            left = x + ox * px - (width if align == "right" else width / 2 if align == "center" else 0)
            bottom = y + oy * px
            box = (left, bottom, left + width, bottom + height)
            # a label over another label is worse than a label over a marker
            hits = 10 * sum(_boxes_overlap(box, t) for t in taken) + sum(
                _boxes_overlap(box, m) for m in markers
            )
            if box[0] < frame.x0 or box[2] > frame.x1 or box[1] < frame.y0 or box[3] > frame.y1:
                hits += 100  # outside the panel: only if nothing else is free
            if best is None or hits < best[0]:
                best = (hits, ox, oy, align, box)
            if hits == 0:
                break
        if best is None:
            continue
        taken.append(best[4])
        dx, dy, ha = best[1], best[2], best[3]
        ax.annotate(
            text,
            (points[i]["latency"]["p95_ms"], 100 * points[i]["ndcg@10"]),
            xytext=(dx, dy),
            textcoords="offset points",
            fontsize=FONT,
            ha=ha,
            va="bottom",
            color=COLOURS.get(points[i]["machine"], "#555555"),
            arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "#888888"} if abs(dy) > FAR else None,
        )


def decision_figure(
    stage: str,
    options: Sequence[Mapping[str, Any]],
    first_stage_ndcg: float | None,
    path: Path,
    *,
    title: str = "",
) -> Path:
    """Draw the stage's options (rows of ``costs.json`` "options") into ``path``."""
    with canvas(*SIZE, DPI) as fig:
        draw_decision(fig, stage, options, first_stage_ndcg, title=title)
        return save_png(fig, path)


def draw_decision(
    fig: Figure,
    stage: str,
    options: Sequence[Mapping[str, Any]],
    first_stage_ndcg: float | None,
    *,
    title: str = "",
) -> list[Axes]:
    """The four machine panels into ``fig``; returns them (GPU, CPU fp32, CPU int8, API)."""
    points = [o for o in options if o["latency"]["p95_ms"] is not None]
    # not shared: each panel gets the same limits and ticks itself; ticks are lines, their labels texts
    axes = fig.subplots(2, 2)
    frame = _frame(points, first_stage_ndcg)
    # the layout first: label placement works in display pixels of the final axes
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.11, top=0.93, wspace=0.05, hspace=0.12)
    for ax, machine in zip(axes.flat, list(COLOURS), strict=True):
        mine = [o for o in points if o["machine"] == machine]
        _draw_panel(ax, machine, mine, frame, first_stage_ndcg, DPI)
    for ax in axes[1]:
        ax.set_xlabel("p95 latency of the reranking step, ms (log scale)", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("nDCG@10 (points), 95 % bootstrap interval", fontsize=8)
    fig.legend(handles=_legend_handles(), fontsize=7, loc="lower center", ncols=4, frameon=False)
    fig.suptitle(
        title
        or f"{stage}: quality, latency and EUR per 1,000 queries (labels: model@k · cost; "
        "† contamination-flagged)",
        fontsize=10,
    )
    return list(axes.flat)


@dataclass(frozen=True)
class _Frame:
    """The axes all panels share: x limits (ms, log scale) and ticks, y limits (points) and padding."""

    lo_x: float
    hi_x: float
    lo_y: float
    hi_y: float
    pad: float
    ticks: list[int]


def _frame(points: Sequence[Mapping[str, Any]], first_stage_ndcg: float | None) -> _Frame:
    xs = [o["latency"]["p95_ms"] for o in points]
    lo_x = min([*xs, LIVE_SEARCH_P95_MS]) / 2.5
    hi_x = max([*xs, CHAT_RERANK_P95_MS]) * 2.5
    ys = [100 * v for o in points for v in o["ndcg@10_interval"]]
    if first_stage_ndcg is not None:
        ys.append(100 * first_stage_ndcg)
    lo_y, hi_y = (min(ys), max(ys)) if ys else (0.0, 100.0)
    pad = max(1.0, 0.08 * (hi_y - lo_y))
    return _Frame(lo_x, hi_x, lo_y, hi_y, pad, [t for t in TICKS if lo_x <= t <= hi_x])


def _draw_panel(
    ax: Axes,
    machine: str,
    mine: Sequence[Mapping[str, Any]],
    frame: _Frame,
    first_stage_ndcg: float | None,
    dpi: float,
) -> None:
    """One machine's panel: the common axes, the budget and first-stage lines, its points and their labels."""
    colour = COLOURS[machine]
    ax.set_xscale("log")
    ax.set_xlim(frame.lo_x, frame.hi_x)
    ax.set_ylim(frame.lo_y - frame.pad, frame.hi_y + frame.pad)
    _panel_ticks(ax, frame)
    ax.grid(alpha=0.3)
    ax.axvline(LIVE_SEARCH_P95_MS, color="#c44e52", ls="--", lw=1)
    ax.axvline(CHAT_RERANK_P95_MS, color="#937860", ls=":", lw=1.2)
    top = frame.hi_y + frame.pad
    ax.text(LIVE_SEARCH_P95_MS * 1.03, top, "live search\n500 ms", fontsize=6.5, color="#c44e52", va="top")
    ax.text(CHAT_RERANK_P95_MS * 1.03, top, "chat\n2,000 ms", fontsize=6.5, color="#937860", va="top")
    if first_stage_ndcg is not None:
        ax.axhline(100 * first_stage_ndcg, color="#999999", ls="--", lw=0.8)
    _draw_intervals(ax, mine, colour)
    for o in mine:
        _draw_point(ax, o, colour)
    _place_labels(ax, mine, dpi)
    note = "" if mine else " (no latency measured)"
    ax.set_title(f"{machine}{note}", fontsize=9, color=colour, loc="left", y=1.0)


def _panel_ticks(ax: Axes, frame: _Frame) -> None:
    """The x ticks at ``frame.ticks``, the log axis's minor ticks and the y ticks, all as lines; the bottom
    row's x ticks and the left column's y ticks labelled by :func:`_tick_labels`."""
    # lazy: matplotlib is heavy; only when a figure is drawn
    from matplotlib.ticker import FixedLocator

    spec = ax.get_subplotspec()
    ax.xaxis.set_major_locator(FixedLocator(frame.ticks))  # set_xticks would make the Tick objects at once
    _ticks_as_lines(ax, "x", major=False)  # after the major locator: a minor tick on a major one is left out
    xs = _ticks_as_lines(ax, "x", major=True)
    if spec is None or spec.is_last_row():
        _tick_labels(ax, "x", [(x, f"{int(x):,}") for x in xs])
    locs = ax.yaxis.get_majorticklocs()  # labelled as Axis._update_ticks labels them: all locations at once
    names = dict(zip(locs, ax.yaxis.get_major_formatter().format_ticks(cast(Any, locs)), strict=True))
    ys = _ticks_as_lines(ax, "y", major=True)
    if spec is None or spec.is_first_col():
        _tick_labels(ax, "y", [(y, names[y]) for y in ys])


def _tick_labels(ax: Axes, name: str, labels: Sequence[tuple[float, str]]) -> None:
    """Tick labels (``name`` "x" or "y": position and text) as the texts a matplotlib Tick would draw there,
    and the axis's label placed where matplotlib puts it beside them (its labelpad beyond the labels'
    extent): the labelled ticks' Tick objects were most of the rest of a panel's ticks' time."""
    # lazy: matplotlib is heavy; only when a figure is drawn
    from matplotlib import rcParams
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox, IdentityTransform, blended_transform_factory

    rc = cast(Any, rcParams)  # canvas's fixed settings; keys built from ``name``
    colour = (
        rc[f"{name}tick.color"] if rc[f"{name}tick.labelcolor"] == "inherit" else rc[f"{name}tick.labelcolor"]
    )
    pad = rc[f"{name}tick.major.pad"] + rc[f"{name}tick.major.size"]  # Tick._pad of an outward tick
    if name == "x":
        place, va, ha = ax.get_xaxis_text1_transform(pad)
    else:
        place, va, ha = ax.get_yaxis_text1_transform(pad)
    texts = []
    for at, text in labels:
        xy = (at, 0.0) if name == "x" else (0.0, at)
        label = Text(*xy, text, fontsize=rc[f"{name}tick.labelsize"], color=colour, va=va, ha=ha)
        label.set(transform=place, clip_on=False, zorder=1.5 if name == "x" else 1.6)
        texts.append(ax.add_artist(label))
    fig = ax.get_figure(root=True)
    assert fig is not None
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # Agg's: the one that draws them
    side = "bottom" if name == "x" else "left"
    extent = Bbox.union(
        [*(t.get_window_extent(renderer) for t in texts), ax.spines[side].get_window_extent()]
    )
    axis = ax.xaxis if name == "x" else ax.yaxis
    gap = axis.labelpad * fig.dpi / 72
    if name == "x":  # Axis._update_label_position's arithmetic, in its transforms
        axis.set_label_coords(
            0.5, extent.y0 - gap, blended_transform_factory(ax.transAxes, IdentityTransform())
        )
    else:
        axis.set_label_coords(
            extent.x0 - gap, 0.5, blended_transform_factory(IdentityTransform(), ax.transAxes)
        )


def _ticks_as_lines(ax: Axes, name: str, *, major: bool) -> list[float]:
    """An axis's ticks (``name`` "x" or "y") and their grid lines as two lines instead of a Tick
    object each: matplotlib makes a Tick of three lines and two texts per position, per panel, which was a
    fifth of a decision figure's time. The same positions (the axis's own locator, less minor ones on a
    major tick, those in view), the same marks and grid lines as matplotlib's ticks draw; the x axis's are
    drawn just before the axes' own ticks, the y axis's just after (as the x axis's before the y axis's).
    Returns the positions drawn (the labels of :func:`_tick_labels`)."""
    # lazy: matplotlib is heavy; only when a figure is drawn
    from matplotlib import rcParams
    from matplotlib.lines import Line2D
    from matplotlib.markers import TICKDOWN, TICKLEFT
    from matplotlib.ticker import NullLocator

    rc = cast(Any, rcParams)  # canvas's fixed settings (matplotlib's defaults); keys built from ``name``
    axis = ax.xaxis if name == "x" else ax.yaxis
    scale = axis.get_transform()
    low, high = sorted(scale.transform(np.sort(axis.get_view_interval())))
    tolerance = (high - low) * 1e-10  # as matplotlib's Axis._update_ticks keeps a tick in view
    locs = [
        v
        for v in (axis.get_majorticklocs() if major else axis.get_minorticklocs())
        if low - tolerance <= scale.transform(v) <= high + tolerance
    ]
    (axis.set_major_locator if major else axis.set_minor_locator)(NullLocator())  # no Tick objects
    across = [v for _ in locs for v in (0.0, 1.0, np.nan)]
    along = [v for x in locs for v in (x, x, np.nan)]
    edge = [0.0] * len(locs)
    size = f"{name}tick.{'major' if major else 'minor'}"
    on_axis = ax.get_xaxis_transform() if name == "x" else ax.get_yaxis_transform()
    zorder = 1.5 if name == "x" else 1.6  # the axes' own ticks: zorder 1.5, the x axis before the y axis
    grid_xy = (along, across) if name == "x" else (across, along)
    marks_xy = (locs, edge) if name == "x" else (edge, locs)
    grid = Line2D(
        grid_xy[0],
        grid_xy[1],
        transform=on_axis,
        zorder=zorder,
        color=rc["grid.color"],
        alpha=0.3,
        linestyle=rc["grid.linestyle"],
        linewidth=rc["grid.linewidth"],
    )
    marks = Line2D(
        marks_xy[0],
        marks_xy[1],
        transform=on_axis,
        zorder=zorder,
        linestyle="none",
        marker=cast(Any, TICKDOWN if name == "x" else TICKLEFT),  # the stubs type markers as str
        color=rc[f"{name}tick.color"],
        markeredgecolor=rc[f"{name}tick.color"],
        markersize=rc[f"{size}.size"],
        markeredgewidth=rc[f"{size}.width"],
        clip_on=False,  # outside the axes, as a tick's mark (unclipped)
    )
    ax.add_line(grid)
    ax.add_line(marks)
    return locs


def _draw_intervals(ax: Axes, mine: Sequence[Mapping[str, Any]], colour: str) -> None:
    """The panel's interval bars in one call (one collection of bars, one line of caps per end): a call per
    option built a collection and two lines each time. All bars are drawn below all markers."""
    if not mine:
        return
    xs = [o["latency"]["p95_ms"] for o in mine]
    ys = [100 * o["ndcg@10"] for o in mine]
    below = [y - 100 * o["ndcg@10_interval"][0] for o, y in zip(mine, ys, strict=True)]
    above = [100 * o["ndcg@10_interval"][1] - y for o, y in zip(mine, ys, strict=True)]
    ax.errorbar(xs, ys, yerr=[below, above], fmt="none", ecolor=colour, elinewidth=0.8, capsize=2, alpha=0.5)


def _draw_point(ax: Axes, o: Mapping[str, Any], colour: str) -> None:
    """An option's marker: shape = k, filled when it meets the live-search budget."""
    # lazy: matplotlib is heavy; only when a figure is drawn
    from matplotlib.lines import Line2D

    x, y = o["latency"]["p95_ms"], 100 * o["ndcg@10"]
    filled = o["live"]["fits"] is True
    # the line ax.plot(x, y, marker, ...) makes, without plot's parsing (the limits are set: no autoscale)
    ax.add_line(
        Line2D(
            [x],
            [y],
            marker=MARKERS.get(o["k"], "D"),
            linestyle="None",
            color=colour,
            markersize=6,
            markerfacecolor=colour if filled else "white",
            markeredgewidth=1.2,
        )
    )


def _legend_handles() -> list[Line2D]:
    # lazy: matplotlib is heavy; only when a figure is drawn
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color="#555555", marker=mk, ls="", mfc="white", label=f"k = {k}")
        for k, mk in MARKERS.items()
    ]
    handles += [
        Line2D([], [], color="#555555", marker="o", ls="", label="filled: live-search budget met"),
        Line2D(
            [],
            [],
            color="#555555",
            marker="o",
            ls="",
            mfc="white",
            label="hollow: missed, or first stage not timed",
        ),
        Line2D([], [], color="#999999", ls="--", label="first stage nDCG@10"),
        Line2D([], [], color="#c44e52", ls="--", label="live search p95 500 ms (first stage + reranker)"),
        Line2D([], [], color="#937860", ls=":", label="chat p95 2,000 ms (reranking step)"),
    ]
    return handles
