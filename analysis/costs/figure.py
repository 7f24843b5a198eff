"""The decision figure, one per stage (PLAN.md, section "Costs"): quality against latency against money.

nDCG@10 with its 95 % bootstrap interval (y) against the p95 latency of the reranking step (x, log scale)
for every model on every machine (colour: GPU, CPU fp32, CPU int8, API; marker: k), each point labelled
with its model@k and EUR per 1,000 queries, the 500 ms live-search and 2,000 ms chat budget lines, and the
first stage's nDCG@10 as a dashed line. A filled marker meets the live-search budget (p95 of first stage plus
reranker per query <= 500 ms); a hollow one does not, or its first-stage time is unknown.
Matplotlib's Agg backend, no timestamps in the PNG, so a rerun writes the same file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter

from analysis.plan import CHAT_RERANK_P95_MS, LIVE_SEARCH_P95_MS

__all__ = ["decision_figure"]

COLOURS: Final = {"GPU": "#4c72b0", "CPU fp32": "#dd8452", "CPU int8": "#55a868", "API": "#8172b2"}
MARKERS: Final = {20: "o", 50: "s", 100: "^"}


def _cost(o: Mapping[str, Any]) -> str:
    v = o["eur_per_1000"]
    if v is None:
        return "price missing"
    return f"{v:.3g} €/1k" if v >= 0.001 else f"{v:.1e} €/1k"


def decision_figure(
    stage: str,
    options: Sequence[Mapping[str, Any]],
    first_stage_ndcg: float | None,
    path: Path,
    *,
    title: str = "",
) -> Path:
    """Draw the stage's options (rows of ``costs.json`` "options") into ``path``."""
    points = [o for o in options if o["latency"]["p95_ms"] is not None]
    fig, ax = plt.subplots(figsize=(12.5, 7.5), dpi=110)
    try:
        xs = [o["latency"]["p95_ms"] for o in points]
        lo_x = min([*xs, LIVE_SEARCH_P95_MS]) / 2.5
        hi_x = max([*xs, CHAT_RERANK_P95_MS]) * 2.5
        for o in points:
            x = o["latency"]["p95_ms"]
            y = 100 * o["ndcg@10"]
            lo, hi = (100 * v for v in o["ndcg@10_interval"])
            colour = COLOURS.get(o["machine"], "#555555")
            filled = o["live"]["fits"] is True
            ax.errorbar(
                x,
                y,
                yerr=[[y - lo], [hi - y]],
                fmt="none",
                ecolor=colour,
                elinewidth=0.8,
                capsize=2,
                alpha=0.6,
            )
            ax.plot(
                x, y, MARKERS.get(o["k"], "D"), ms=6, color=colour, mfc=colour if filled else "white", mew=1.2
            )
            flag = "†" if o["flagged"] else ""
            ax.annotate(
                f"{o['model']}{flag}@{o['k']}\n{_cost(o)}",
                (x, y),
                xytext=(5, 3),
                textcoords="offset points",
                fontsize=6,
                color=colour,
            )
        ax.set_xscale("log")
        ax.set_xlim(lo_x, hi_x)
        ax.axvline(LIVE_SEARCH_P95_MS, color="#c44e52", ls="--", lw=1)
        ax.axvline(CHAT_RERANK_P95_MS, color="#937860", ls=":", lw=1.2)
        ymax = ax.get_ylim()[1]
        ax.text(
            LIVE_SEARCH_P95_MS * 1.03,
            ymax,
            f"live search {LIVE_SEARCH_P95_MS} ms\n(first stage + reranker)",
            fontsize=7,
            color="#c44e52",
            va="top",
        )
        ax.text(
            CHAT_RERANK_P95_MS * 1.03,
            ymax,
            f"chat {CHAT_RERANK_P95_MS:,} ms\n(reranking step)",
            fontsize=7,
            color="#937860",
            va="top",
        )
        if first_stage_ndcg is not None:
            ax.axhline(100 * first_stage_ndcg, color="#999999", ls="--", lw=0.8)
            ax.text(
                lo_x * 1.05, 100 * first_stage_ndcg, "first stage", fontsize=7, color="#777777", va="bottom"
            )
        handles = [Line2D([], [], color=c, marker="o", ls="", label=m) for m, c in COLOURS.items()]
        handles += [
            Line2D([], [], color="#555555", marker=mk, ls="", mfc="white", label=f"k = {k}")
            for k, mk in MARKERS.items()
        ]
        handles.append(Line2D([], [], color="#555555", marker="o", ls="", label="filled: live budget met"))
        handles.append(
            Line2D(
                [],
                [],
                color="#555555",
                marker="o",
                ls="",
                mfc="white",
                label="hollow: missed or\nfirst stage not timed",
            )
        )
        handles.append(Line2D([], [], color="#999999", ls="--", label="first stage nDCG@10"))
        ax.legend(
            handles=handles,
            fontsize=7,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            framealpha=0.9,
            title="machine, k",
            title_fontsize=7,
        )
        ticks = [
            t
            for t in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000)
            if lo_x <= t <= hi_x
        ]
        ax.set_xticks(ticks, [f"{t:,}" for t in ticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("p95 latency of the reranking step, ms (log scale)")
        ax.set_ylabel("nDCG@10 (points) with 95 % bootstrap interval")
        ax.set_title(title or f"{stage}: quality, latency and EUR per 1,000 queries", fontsize=10)
        ax.grid(alpha=0.3, which="both")
        if not points:
            ax.text(
                0.5, 0.5, "no latency measured for this stage's runs", transform=ax.transAxes, ha="center"
            )
        fig.subplots_adjust(left=0.07, right=0.83, bottom=0.08, top=0.94)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="png", metadata={"Software": None})
    finally:
        plt.close(fig)
    return path
