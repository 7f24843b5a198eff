"""The latency section's figure, one per machine (plan section "Latency"): p50 and p95 per call against k for
every model (log scale), with the two budget lines (section "Costs": live search p95 <= 500 ms in total, chat
p95 <= 2,000 ms for the reranking step). The points are the medians over passes that the latency section
computed (:func:`analysis.latency.report.figure_series`). 7.5 x 4.2 inches at 100 dpi.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from analysis.core.plan import LATENCY_BUDGET_CHAT_P95_MS, LATENCY_BUDGET_LIVE_P95_MS
from analysis.figures.render import canvas, save_png

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["DPI", "SIZE", "Series", "draw_latency", "latency_figure"]

SIZE: Final = (7.5, 4.2)  # inches
DPI: Final = 100
LIVE_COLOUR: Final = "#c44e52"
CHAT_COLOUR: Final = "#8172b2"


@dataclass(frozen=True)
class Series:
    """One model's line: k and, per k, the p50 and p95 in ms (medians over passes)."""

    target: str
    ks: tuple[int, ...]
    p50_ms: tuple[float, ...]
    p95_ms: tuple[float, ...]


def draw_latency(fig: Figure, title: str, series: Sequence[Series]) -> Axes:
    """The lines, budget lines and labels into ``fig``; returns the axes."""
    ax = fig.subplots()
    for i, s in enumerate(series):
        colour = f"C{i % 10}"
        ax.plot(s.ks, s.p50_ms, "o-", color=colour, label=f"{s.target} p50", lw=1.2, ms=4)
        ax.plot(s.ks, s.p95_ms, "s--", color=colour, label=f"{s.target} p95", lw=1.0, ms=3)
    ax.axhline(LATENCY_BUDGET_LIVE_P95_MS, color=LIVE_COLOUR, ls=":", lw=1)
    ax.axhline(LATENCY_BUDGET_CHAT_P95_MS, color=CHAT_COLOUR, ls=":", lw=1)
    left = ax.get_xlim()[0]
    budgets = (
        (LATENCY_BUDGET_LIVE_P95_MS, " live search p95 budget (total)", LIVE_COLOUR),
        (LATENCY_BUDGET_CHAT_P95_MS, " chat p95 budget (reranking)", CHAT_COLOUR),
    )
    for ms, text, colour in budgets:
        ax.text(left, ms, text, fontsize=6, va="bottom", color=colour)
    ax.set_yscale("log")
    ax.set_xlabel("k (candidates per call)")
    ax.set_ylabel("ms per call (log scale)")
    ax.set_title(title, fontsize=9, y=1.0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2, loc="upper left")
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.12, top=0.92)
    return ax


def latency_figure(title: str, series: Sequence[Series], path: Path) -> Path:
    """The figure as a PNG at ``path``."""
    with canvas(*SIZE, DPI) as fig:
        draw_latency(fig, title, series)
        return save_png(fig, path)
