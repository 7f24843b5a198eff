"""The report's latency section (plan section "Latency": p50 and p95 per machine, model, k and pass;
section "Costs": the latency budgets, live search p95 <= 500 ms in total, chat p95 <= 2,000 ms).

Per machine (``<kind>/<session>``) one table (model, k, pass, p50, p95, mean, n, retries for the API, chunk
size, accuracy) and one figure with p50 and p95 against k for every model and the two budget lines.
Published blocks and not-published ones (pre-measurement, rehearsal, unrated models) never share a table
or a figure: they are separate sub-sections, the second headed NOT PUBLISHED. Every number is recomputed
from the raw samples (``analysis.latency.summary``); ``latency-summary/<publication>-<kind>-<session>.json``
holds the same numbers at full precision, no timestamps, so a rerun writes the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from analysis.core.atomic import write_json_atomic
from analysis.core.plan import LATENCY_BUDGET_CHAT_P95_MS, LATENCY_BUDGET_LIVE_P95_MS
from analysis.figures.latency import Series, latency_figure
from analysis.latency.records import Block, read_blocks
from analysis.latency.summary import PERCENTILE_METHOD, block_summary

__all__ = ["figure_series", "latency_section", "machine_rows"]


def _ms(x: float | None) -> str:
    return "" if x is None else f"{x:,.1f}"


def machine_rows(blocks: Sequence[Block]) -> list[dict[str, Any]]:
    rows = []
    for b in sorted(blocks, key=lambda b: (b.target, b.k, b.pass_)):
        s = block_summary(b)
        rows.append(
            {
                "target": b.target,
                "k": b.k,
                "pass": b.pass_,
                "n": s.latency.n,
                "p50_ms": s.latency.p50_ms,
                "p95_ms": s.latency.p95_ms,
                "mean_ms": s.latency.mean_ms,
                "min_ms": s.latency.min_ms,
                "max_ms": s.latency.max_ms,
                "cuda_p50_ms": s.cuda.p50_ms,
                "failed": s.failed,
                "retried": s.retried,
                "chunk_size": b.chunk_size,
                "billed_tokens": s.billed_tokens,
                "server_p50_ms": s.server_ms.p50 if s.server_ms else None,
                "server_p95_ms": s.server_ms.p95 if s.server_ms else None,
                "input_tokens_p50": s.input_tokens.p50 if s.input_tokens else None,
                "accuracy": b.accuracy.status,
                "marks": list(b.marks),
                "file": Path(b.relpath()).as_posix(),
            }
        )
    return rows


def _table(kind: str, rows: list[dict[str, Any]]) -> list[str]:
    notes: list[str] = []
    out = []
    if kind == "first-stage":
        out += [
            "| stage | k | pass | p50 ms | p95 ms | mean ms | n | server p50 ms | server p95 ms | note |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
    else:
        out += [
            "| model | k | pass | p50 ms | p95 ms | mean ms | n | retried | failed | chunk | tokens/call p50 "
            "| accuracy | note |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
        ]
    for r in rows:
        note = ""
        if r["marks"]:
            notes += [m for m in r["marks"] if m not in notes]
            note = ", ".join(f"[{notes.index(m) + 1}]" for m in r["marks"])
        head = (
            f"| {r['target']} | {r['k']} | {r['pass']} | {_ms(r['p50_ms'])} | {_ms(r['p95_ms'])} | "
            f"{_ms(r['mean_ms'])} | {r['n']} |"
        )
        if kind == "first-stage":
            out.append(f"{head} {_ms(r['server_p50_ms'])} | {_ms(r['server_p95_ms'])} | {note} |")
        else:
            chunk = "" if r["chunk_size"] is None else r["chunk_size"]
            tokens = "" if r["input_tokens_p50"] is None else f"{r['input_tokens_p50']:,.0f}"
            retried = r["retried"] if kind == "api" else ""
            out.append(f"{head} {retried} | {r['failed']} | {chunk} | {tokens} | {r['accuracy']} | {note} |")
    out.append("")
    out += [f"[{i}] {m}" for i, m in enumerate(notes, 1)]
    if notes:
        out.append("")
    return out


def figure_series(rows: list[dict[str, Any]]) -> list[Series]:
    """Per model (sorted), the figure's points: for each k the median over passes of each pass's p50 and
    p95 (rows whose calls all failed have no p50 and are left out)."""
    series = []
    for t in sorted({r["target"] for r in rows}):
        mine = [r for r in rows if r["target"] == t and r["p50_ms"] is not None]
        ks = sorted({r["k"] for r in mine})
        p50 = [float(np.median([r["p50_ms"] for r in mine if r["k"] == k])) for k in ks]
        p95 = [float(np.median([r["p95_ms"] for r in mine if r["k"] == k])) for k in ks]
        series.append(Series(t, tuple(ks), tuple(p50), tuple(p95)))
    return series


def latency_section(folder: Path | str, out_dir: Path | str, *, figures: bool = True) -> list[str]:
    """Markdown lines of the latency section for every block under ``folder``; writes JSON and figures."""
    folder, out_dir = Path(folder), Path(out_dir)
    blocks = read_blocks(folder) if folder.is_dir() else ()
    md = ["## Latency", ""]
    if not blocks:
        return [*md, f"No latency blocks under {folder}.", ""]
    md += [
        "One call = one query with k candidates, texts in to scores out, model loaded; warm-up calls "
        "discarded. "
        f"Percentiles: {PERCENTILE_METHOD}. Budgets (plan, assumption): live search p95 <= "
        f"{LATENCY_BUDGET_LIVE_P95_MS:,} ms in total (first stage plus reranker), chat p95 <= "
        f"{LATENCY_BUDGET_CHAT_P95_MS:,} ms for the reranking step. Figures: median over passes of each "
        "pass's p50 and p95.",
        "",
    ]
    for published in (True, False):
        mine = [b for b in blocks if b.published is published]
        if not mine:
            continue
        heading = "Published" if published else "NOT PUBLISHED (pre-measurement, rehearsal or unrated)"
        md += [f"### {heading}", ""]
        groups = sorted({(b.kind, b.session) for b in mine})
        for kind, session in groups:
            group = [b for b in mine if (b.kind, b.session) == (kind, session)]
            rows = machine_rows(group)
            pub = "published" if published else "not-published"
            name = f"{pub}-{kind}-{session}"
            record = {
                "publication": pub,
                "kind": kind,
                "session": session,
                "machine": group[0].machine,
                "percentile_method": PERCENTILE_METHOD,
                "rows": rows,
            }
            write_json_atomic(out_dir / "latency-summary" / f"{name}.json", record)
            md += [f"#### {kind}: {session} ({group[0].machine})", "", *_table(kind, rows)]
            if figures and kind != "first-stage":
                latency_figure(
                    f"{kind} {session}{'' if published else ' (NOT PUBLISHED)'}: p50 and p95 against k",
                    figure_series(rows),
                    out_dir / "figures" / f"latency-{name}.png",
                )
                md += [f"![latency {name}](figures/latency-{name}.png)", ""]
    return md
