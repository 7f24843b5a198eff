"""The cost formulas against hand-computed cases (PLAN.md, section "Costs"): one test per rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.costs.formulas import (
    SETUP_AMORTISATION_MONTHS,
    api_eur_per_query,
    break_even,
    capacity_per_month,
    eur_per_1000_queries,
    p95_ms,
    per_query_sum_ms,
    server_month,
    to_eur,
)


def test_capacity_full_and_half_load() -> None:
    # 2,592,000 s / 0.2 s = 12,960,000 queries; half of it at 50 %
    assert capacity_per_month(200.0, 1.0) == pytest.approx(12_960_000.0, rel=1e-15)
    assert capacity_per_month(200.0, 0.5) == pytest.approx(6_480_000.0, rel=1e-15)
    assert capacity_per_month(1_000.0, 1.0) == pytest.approx(2_592_000.0, rel=1e-15)
    with pytest.raises(ValueError):
        capacity_per_month(0.0, 1.0)
    with pytest.raises(ValueError):
        capacity_per_month(10.0, 1.5)


def test_cost_per_1000_queries_of_a_server() -> None:
    # 138.49 EUR / 2,592,000 queries (1 s each, full load) x 1000 = 0.053429... EUR
    assert eur_per_1000_queries(138.49, 1_000.0, 1.0) == pytest.approx(138.49 / 2_592.0, rel=1e-12)
    assert eur_per_1000_queries(138.49, 1_000.0, 0.5) == pytest.approx(2 * 138.49 / 2_592.0, rel=1e-12)


def test_api_cost_usd_and_eur() -> None:
    # 2,000 billed tokens at 0.05 USD per million = 0.0001 USD; at 1.25 USD per EUR = 0.00008 EUR
    assert api_eur_per_query(2_000, 0.05, "USD", 1.25) == pytest.approx(0.00008, rel=1e-12)
    assert api_eur_per_query(2_000, 0.05, "EUR", None) == pytest.approx(0.0001, rel=1e-12)
    with pytest.raises(ValueError, match="ECB USD rate"):
        to_eur(1.0, "USD", None)
    with pytest.raises(ValueError, match="only EUR and USD"):
        to_eur(1.0, "GBP", 1.0)


def test_server_months_show_the_interpretation() -> None:
    gex = server_month("GEX45")
    assert SETUP_AMORTISATION_MONTHS == 12
    assert gex.eur == pytest.approx(212.30 + 1.70 + 209 / 12, rel=1e-12)  # 231.4166...
    assert "209 EUR setup / 12 months" in gex.formula() and "D-026" in gex.record()["interpretation"]
    ccx = server_month("CCX33")
    assert ccx.eur is None and ccx.missing == ("IPv4 add-on",)
    assert "price missing" in ccx.formula()
    assert server_month("CCX33", 0.5).eur == pytest.approx(138.99, rel=1e-12)


def test_live_budget_is_p95_of_the_per_query_sum_not_the_sum_of_p95s() -> None:
    # first stage is slow exactly where the reranker is fast: p95 of the sums is far below the sum of p95s
    first = {f"q{i}": (100.0 if i < 10 else 10.0) for i in range(20)}
    rerank = [(f"q{i}", (10.0 if i < 10 else 400.0)) for i in range(20)]
    sums = per_query_sum_ms(first, rerank)
    assert sums.tolist() == [110.0] * 10 + [410.0] * 10
    assert p95_ms(sums) == pytest.approx(410.0)
    sum_of_p95 = p95_ms(list(first.values())) + p95_ms([ms for _, ms in rerank])
    assert sum_of_p95 == pytest.approx(500.0)
    # one query over budget in 20 samples: the linear p95 sits between the 19th and 20th value
    sums2 = np.array([100.0] * 19 + [700.0])
    assert p95_ms(sums2) == pytest.approx(100.0 + 0.05 * 600.0)  # 130 ms: the live budget holds
    with pytest.raises(ValueError, match="no first-stage time"):
        per_query_sum_ms({"q1": 1.0}, [("q2", 5.0)])


def test_live_budget_decides_break_even() -> None:
    # same server and API price; p95 of first stage + reranker 520 ms > 500 ms: not reachable for live search
    be = break_even(231.0, 0.0001, capacity=5_000_000, p95=520.0, budget_ms=500)
    assert be.status == "not reachable" and be.failed == ("p95 520.0 ms > 500 ms budget",)
    assert be.queries_per_month == pytest.approx(2_310_000.0)


def test_chat_budget_decides_break_even() -> None:
    ok = break_even(231.0, 0.0001, capacity=5_000_000, p95=1_999.0, budget_ms=2_000)
    assert ok.status == "reachable" and ok.text() == "2,310,000 queries/month"
    over = break_even(231.0, 0.0001, capacity=5_000_000, p95=2_000.5, budget_ms=2_000)
    assert over.status == "not reachable" and "2,000 ms budget" in over.failed[0]


def test_break_even_reachable_and_not_by_capacity() -> None:
    # 138.49 EUR / 0.00005 EUR per query = 2,769,800 queries a month
    fits = break_even(138.49, 0.00005, capacity=2_769_801, p95=100.0, budget_ms=500)
    assert fits.status == "reachable" and fits.queries_per_month == pytest.approx(2_769_800.0, rel=1e-12)
    short = break_even(138.49, 0.00005, capacity=2_000_000, p95=100.0, budget_ms=500)
    assert short.status == "not reachable"
    assert short.failed == ("capacity 2,000,000 < 2,769,800 queries/month needed",)
    both = break_even(138.49, 0.00005, capacity=2_000_000, p95=900.0, budget_ms=500)
    assert len(both.failed) == 2 and both.text().startswith("not reachable (p95 900.0 ms > 500 ms")


def test_break_even_with_a_missing_price() -> None:
    be = break_even(None, 0.0001, capacity=1e9, p95=1.0, budget_ms=500, missing=("IPv4 add-on",))
    assert (
        be.status == "price missing"
        and be.queries_per_month is None
        and be.text() == ("price missing (IPv4 add-on)")
    )
    assert break_even(100.0, None, capacity=1e9, p95=1.0, budget_ms=500).status == "price missing"
    free = break_even(100.0, 0.0, capacity=1e9, p95=1.0, budget_ms=500)
    assert free.status == "not reachable" and free.queries_per_month is None
    assert not math.isnan(capacity_per_month(1.0, 1.0))
