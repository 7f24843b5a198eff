"""The costs section of ``report.md`` (PLAN.md, section "Costs"), rendered from the ``costs.json`` record.

Everything shown comes from the record ``analysis.costs.section.build_costs`` returned; a value that is
missing is written "price missing" (or what else is missing), never 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analysis.core.plan import CONTEXT_REFERENCE_LLMS
from analysis.costs.prices import API_MODELS

__all__ = ["costs_markdown"]


def _eur(x: float | None) -> str:
    return "price missing" if x is None else f"{x:.4f}"


def _ms(x: float | None) -> str:
    return "" if x is None else f"{x:,.1f}"


def _fits(x: bool | None) -> str:
    return "?" if x is None else ("yes" if x else "no")


def _be_text(r: Mapping[str, Any]) -> str:
    if r["status"] == "no API run":
        return "no API run"
    if r["status"] == "reachable":
        return f"{r['queries_per_month']:,.0f}/month"
    return f"{r['status']} ({'; '.join(r['failed'])})"


def costs_markdown(costs: Mapping[str, Any], *, figures: Sequence[str] = ()) -> list[str]:
    """The report's costs section, from the record ``build_costs`` returned."""
    lines = ['## Costs (PLAN.md, section "Costs")', ""]
    lines += _inputs_lines(costs)
    lines.append("")
    for stage in sorted({o["stage"] for o in costs["options"]} | {c["stage"] for c in costs["context"]}):
        lines += _stage_lines(costs, stage, figures)
    return lines


def _inputs_lines(costs: Mapping[str, Any]) -> list[str]:
    """The bullet list before the tables: notes, formulas, budgets, the ECB rate, prices, what is missing."""
    cur = costs["currency"]
    lines = [f"- {n}" for n in costs["notes"]]
    lines += [
        "- Server months (D-026): "
        + "; ".join(f"{k}: {_server_formula(v)}" for k, v in costs["servers"].items()),
        f"- Server cost per 1,000 queries and break-even at {100 * costs['cost_utilisation']:.0f} % "
        "utilisation (D-027); capacity = 2,592,000 s per month / mean latency, one query at a "
        "time, at full load and at 50 %; for the GPU a lower bound (no batching across queries).",
        f"- Budgets: live search p95 of first stage + reranker per query <= {costs['budgets_ms']['live']} "
        f"ms; chat p95 of the reranking step <= {costs['budgets_ms']['chat']:,} ms.",
        "- ECB rate: "
        + (
            f"{cur['usd_per_eur']} USD per EUR on {cur['measurement_day']} ({cur['file']['path']}, "
            f"SHA-256 {cur['file']['sha256']})"
            if cur["usd_per_eur"] is not None
            else "not used (no USD amount was converted)"
        ),
        f"- Prices: {costs['inputs']['prices']['path'] or 'no prices file'}"
        + (
            f" (SHA-256 {costs['inputs']['prices']['sha256']})" if costs["inputs"]["prices"]["sha256"] else ""
        ),
    ]
    lines.append(
        "- API list prices: "
        + "; ".join(
            f"{m}: "
            + (
                "price missing"
                if p is None
                else f"{p['value']} {p['currency']} {p['unit']} ({p['date']}, {p['source']})"
            )
            for m, p in costs["api_prices"].items()
        )
    )
    lines.append(_llm_prices_line(costs["llm_prices"]))
    if costs["missing"]:
        lines.append(
            f"- Missing ({'accepted with --allow-missing' if costs['allow_missing'] else 'exit 1'}): "
            + "; ".join(costs["missing"])
        )
    return lines


def _llm_prices_line(llm: Mapping[str, Any]) -> str:
    return (
        "- Reference LLM input prices: "
        + (
            "; ".join(
                f"{n}: {p['value']} {p['currency']} {p['unit']} ({p['date']}, {p['source']})"
                for n, p in llm.items()
            )
            or "none"
        )
        + (
            f" (price missing: {CONTEXT_REFERENCE_LLMS - len(llm)} of {CONTEXT_REFERENCE_LLMS})"
            if len(llm) < CONTEXT_REFERENCE_LLMS
            else ""
        )
    )


def _stage_lines(costs: Mapping[str, Any], stage: str, figures: Sequence[str]) -> list[str]:
    """One stage's subsection: the options table, the context table and the decision figure."""
    lines = [f"### Costs at {stage}", ""]
    without = [r for r in costs["runs_without_latency"] if r.startswith(f"{stage}/")]
    if without:
        lines += [f"No latency measured for: {', '.join(w.split('/', 1)[1] for w in without)}.", ""]
    lines += [
        "| run | machine | nDCG@10 | p95 ms | live p95 ms | live ≤ 500 | chat ≤ 2,000 | capacity/month "
        "(full / 50 %) | EUR per 1,000 queries | break-even " + " | break-even ".join(API_MODELS) + " |",
        "|---|---|" + "---:|" * (7 + len(API_MODELS)),
    ]
    lines += [_option_row(o) for o in costs["options"] if o["stage"] == stage]
    lines += ["", "Break-even cells: live / chat budget.", ""]
    ctx = [c for c in costs["context"] if c["stage"] == stage]
    if ctx:
        lines += _context_table(ctx)
    for fig in figures:
        if fig.endswith(f"costs-{stage}.png"):
            lines += [f"![Decision figure at {stage}]({fig})", ""]
    return lines


def _option_row(o: Mapping[str, Any]) -> str:
    cap = o["capacity"]
    cap_text = "" if cap is None else " / ".join(f"{v:,.0f}" for v in cap["queries_per_month"].values())
    if cap is not None and cap["lower_bound"]:
        cap_text = "≥ " + cap_text
    be = [
        " / ".join(_be_text(o["break_even"][a][n]) for n in ("live", "chat")) if a in o["break_even"] else ""
        for a in API_MODELS
    ]
    fp32 = " (unquantised quality)" if o.get("quality_note") else ""
    return (
        f"| {o['model']}{'†' if o['flagged'] else ''}@{o['k']}{fp32} | {o['machine']} | "
        f"{100 * o['ndcg@10']:.1f} | {_ms(o['latency']['p95_ms'])} | {_ms(o['live']['p95_ms'])} | "
        f"{_fits(o['live']['fits'])} | {_fits(o['chat']['fits'])} | {cap_text} | "
        f"{_eur(o['eur_per_1000'])} | " + " | ".join(be) + " |"
    )


def _context_table(ctx: Sequence[Mapping[str, Any]]) -> list[str]:
    """One stage's context calculation: the smallest k without reranker that reaches the reranked Hit@5."""
    llm_names = sorted({n for c in ctx for n in c["llms"]})
    lines = [
        "Context calculation (answer quality is not measured): smallest k without reranker whose "
        "Hit@k (and Recall@k) reaches the reranked value at k = 5.",
        "",
        "| run | Hit@5 reranked | k (Hit) | k (Recall) | k | saved passages | mean tokens | "
        + "".join(f"saved EUR/1,000 ({n}) | " for n in llm_names)
        + "reranker EUR/1,000 |",
        "|---|" + "---:|" * (7 + len(llm_names)),
    ]
    lines += [_context_row(c, llm_names) for c in ctx]
    lines.append("")
    return lines


def _context_row(c: Mapping[str, Any], llm_names: Sequence[str]) -> str:
    k_text = str(c["k"]) if c["k"] is not None else f"> {c['searched_to_k']}"
    saved = [_eur(c["llms"][n]["saved_eur_per_1000"]) for n in llm_names]
    rer = "; ".join(f"{m} {_eur(v)}" for m, v in sorted(c["reranker_eur_per_1000"].items())) or "no latency"
    cells = [
        f"{c['model']}@{c['depth']}",
        f"{100 * c['reranked_hit']:.1f}",
        str(c["k_hit"] or f"> {c['searched_to_k']}"),
        str(c["k_recall"] or f"> {c['searched_to_k']}"),
        k_text,
        "" if c["saved_passages"] is None else str(c["saved_passages"]),
        "tokens missing" if c["mean_passage_tokens"] is None else f"{c['mean_passage_tokens']:.1f}",
        *saved,
        rer,
    ]
    return "| " + " | ".join(cells) + " |"


def _server_formula(rec: Mapping[str, Any]) -> str:
    parts = [
        f"{p['eur_per_month']:.2f} ({p['what']})"
        if p["eur_per_month"] is not None
        else f"({p['what']}: price missing)"
        for p in rec["parts"]
    ]
    total = "price missing" if rec["eur_per_month"] is None else f"{rec['eur_per_month']:.2f} EUR/month"
    return " + ".join(parts) + f" = {total}"
