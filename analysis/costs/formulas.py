"""The plan's cost formulas (PLAN.md, section "Costs"), pure functions tested against hand-computed cases.

* API cost per query = billed tokens per query at that k x list price x ECB rate (USD -> EUR).
* Server month: the plan's fixed monthly prices; what recurs and how the GEX45 setup is spread is the
  interpretation of D-026, shown in every table (:func:`server_month`).
* Capacity = 2,592,000 s per month / mean latency (one query at a time), at full load and at 50 %; for the
  GPU a lower bound (no batching across queries).
* Budgets: live search p95 <= 500 ms for first stage plus reranker (p95 of the per-query *sum*, not the sum
  of two p95s); chat p95 <= 2,000 ms for the reranking step alone.
* Break-even = monthly price / API cost per query, shown only where capacity and p95 fit; otherwise
  "not reachable" with the condition that failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import numpy as np

from analysis.core.floatsum import ltr_sum
from analysis.core.plan import (
    CCX33_EUR_PER_MONTH,
    CHAT_RERANK_P95_MS,
    GEX45_EUR_EXTRA_PER_MONTH,
    GEX45_EUR_PER_MONTH,
    GEX45_EUR_SETUP,
    LIVE_SEARCH_P95_MS,
    SECONDS_PER_MONTH,
)

__all__ = [
    "BUDGETS",
    "BreakEven",
    "ServerMonth",
    "api_eur_per_query",
    "break_even",
    "capacity_per_month",
    "eur_per_1000_queries",
    "p95_ms",
    "per_query_sum_ms",
    "server_month",
    "to_eur",
]

# D-026: the GEX45's one-off setup fee is spread evenly over this many months of rental.
SETUP_AMORTISATION_MONTHS: Final = 12
INTERPRETATION: Final = "D-026"
BUDGETS: Final = {"live": LIVE_SEARCH_P95_MS, "chat": CHAT_RERANK_P95_MS}
# numpy's default (linear interpolation, Hyndman & Fan type 7), the same percentile as every other p95 here
PERCENTILE_METHOD: Final = "linear"


def to_eur(value: float, currency: str, usd_per_eur: float | None) -> float:
    """An amount in EUR; USD amounts are divided by the ECB rate (USD per 1 EUR)."""
    if currency == "EUR":
        return value
    if currency != "USD":
        raise ValueError(f"currency {currency!r}: only EUR and USD are converted")
    if usd_per_eur is None or not usd_per_eur > 0:
        raise ValueError("a USD amount needs the ECB USD rate of the measurement day")
    return value / usd_per_eur


def api_eur_per_query(
    billed_tokens_per_query: float, price_per_million: float, currency: str, usd_per_eur: float | None
) -> float:
    """Billed tokens per query x list price (per million tokens) x rate."""
    if billed_tokens_per_query < 0:
        raise ValueError(f"billed tokens per query {billed_tokens_per_query} < 0")
    return to_eur(billed_tokens_per_query * price_per_million / 1_000_000, currency, usd_per_eur)


@dataclass(frozen=True)
class ServerMonth:
    """A server's monthly price in EUR from its parts; ``eur`` is None while a part's price is missing."""

    machine: str
    parts: tuple[tuple[str, float | None, str], ...]  # (what, EUR per month or None, where from)
    eur: float | None
    missing: tuple[str, ...] = field(default=())

    def record(self) -> dict[str, Any]:
        return {
            "machine": self.machine,
            "eur_per_month": self.eur,
            "missing": list(self.missing),
            "parts": [{"what": w, "eur_per_month": v, "source": s} for w, v, s in self.parts],
            "interpretation": INTERPRETATION,
        }

    def formula(self) -> str:
        shown = [f"{v:.2f} ({w})" if v is not None else f"({w}: price missing)" for w, v, _ in self.parts]
        total = f"{self.eur:.2f} EUR/month" if self.eur is not None else "price missing"
        return " + ".join(shown) + f" = {total} ({INTERPRETATION})"


def server_month(server: Literal["CCX33", "GEX45"], ipv4_eur_per_month: float | None = None) -> ServerMonth:
    """The monthly price of the plan's servers under D-026.

    CCX33: 138.49 EUR plus the IPv4 add-on from the prices file (missing until entered). GEX45: 212.30 EUR
    plus 1.70 EUR every month, plus the 209 EUR setup spread over :data:`SETUP_AMORTISATION_MONTHS` months.
    """
    if server == "CCX33":
        parts: tuple[tuple[str, float | None, str], ...] = (
            ("monthly price", CCX33_EUR_PER_MONTH, "PLAN.md"),
            ("IPv4 add-on", ipv4_eur_per_month, "prices file [server.ccx33-ipv4]"),
        )
    elif server == "GEX45":
        parts = (
            ("monthly price", GEX45_EUR_PER_MONTH, "PLAN.md"),
            ("1.70 EUR, recurring monthly", GEX45_EUR_EXTRA_PER_MONTH, f"PLAN.md; {INTERPRETATION}"),
            (
                f"209 EUR setup / {SETUP_AMORTISATION_MONTHS} months",
                GEX45_EUR_SETUP / SETUP_AMORTISATION_MONTHS,
                f"PLAN.md; {INTERPRETATION}",
            ),
        )
    else:
        raise ValueError(f"unknown server {server!r}")
    missing = tuple(w for w, v, _ in parts if v is None)
    total = None if missing else ltr_sum(v for _, v, _ in parts if v is not None)
    return ServerMonth(server, parts, total, missing)


def capacity_per_month(mean_ms: float, utilisation: float) -> float:
    """Queries per month, one at a time: 2,592,000 s x utilisation / mean latency."""
    if not mean_ms > 0:
        raise ValueError(f"mean latency {mean_ms} ms must be > 0")
    if not 0 < utilisation <= 1:
        raise ValueError(f"utilisation {utilisation} outside (0, 1]")
    return SECONDS_PER_MONTH * utilisation / (mean_ms / 1000.0)


def eur_per_1000_queries(eur_per_month: float, mean_ms: float, utilisation: float) -> float:
    """A server's cost per 1,000 queries when it serves ``capacity_per_month`` queries a month."""
    return 1000.0 * eur_per_month / capacity_per_month(mean_ms, utilisation)


def p95_ms(samples_ms: Sequence[float] | np.ndarray) -> float:
    values = np.asarray(samples_ms, dtype=np.float64)
    if values.size == 0:
        raise ValueError("p95 of no samples")
    return float(np.percentile(values, 95, method=PERCENTILE_METHOD))


def per_query_sum_ms(first_stage_ms: dict[str, float], rerank_ms: Sequence[tuple[str, float]]) -> np.ndarray:
    """First-stage time plus reranker time of the same query, one value per reranker sample.

    ``rerank_ms`` is (query id, ms) per measured call (several passes give several samples of a query);
    each is paired with that query's first-stage time. A query without a first-stage time is an error.
    """
    missing = sorted({q for q, _ in rerank_ms if q not in first_stage_ms})
    if missing:
        raise ValueError(f"no first-stage time for {len(missing)} quer(y/ies), e.g. {missing[0]!r}")
    return np.array([first_stage_ms[q] + ms for q, ms in rerank_ms], dtype=np.float64)


@dataclass(frozen=True)
class BreakEven:
    """``queries_per_month``: the break-even volume; ``status`` "reachable" only if every condition holds."""

    status: Literal["reachable", "not reachable", "price missing"]
    queries_per_month: float | None
    failed: tuple[str, ...]

    def record(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "queries_per_month": self.queries_per_month,
            "failed": list(self.failed),
        }

    def text(self) -> str:
        if self.status == "reachable" and self.queries_per_month is not None:
            return f"{self.queries_per_month:,.0f} queries/month"
        if self.status == "price missing":
            return "price missing (" + "; ".join(self.failed) + ")"
        return "not reachable (" + "; ".join(self.failed) + ")"


def break_even(
    eur_per_month: float | None,
    api_eur_per_query: float | None,
    *,
    capacity: float,
    p95: float,
    budget_ms: float,
    missing: Sequence[str] = (),
) -> BreakEven:
    """Monthly price / API cost per query, valid only where ``capacity`` covers it and ``p95`` fits.

    ``p95`` is the p95 the budget is about (live search: of first stage plus reranker per query; chat: of
    the reranker), ``capacity`` the queries per month the server serves at the utilisation considered.
    """
    if eur_per_month is None or api_eur_per_query is None:
        return BreakEven("price missing", None, tuple(missing) or ("price missing",))
    if not api_eur_per_query > 0:
        return BreakEven("not reachable", None, ("API cost per query is 0: the API is never dearer",))
    volume = eur_per_month / api_eur_per_query
    failed = []
    if p95 > budget_ms:
        failed.append(f"p95 {p95:,.1f} ms > {budget_ms:,} ms budget")
    if volume > capacity:
        failed.append(f"capacity {capacity:,.0f} < {volume:,.0f} queries/month needed")
    if failed:
        return BreakEven("not reachable", volume, tuple(failed))
    return BreakEven("reachable", volume, ())
