"""The prices file: every price the plan does not fix, entered by the author with date, currency and source.

PLAN.md ("Costs") fixes the Hetzner prices (:mod:`analysis.core.plan`); the Voyage list prices, the CCX33's
IPv4 add-on and the input prices of the two reference LLMs are read on the measurement day and entered in
``prices.toml`` (repository root, :data:`DEFAULT_PRICES`). One TOML table per price::

    [api.voyage-rerank-3]              # or api.voyage-rerank-3-lite
    value = 0.05                       # a number >= 0, never a string
    currency = "USD"                   # EUR or USD
    unit = "per million tokens"        # the unit the group requires (UNITS)
    date = 2026-12-01                  # the day the price was read
    source = "https://..."             # where it was read (http or https URL)

    [server.ccx33-ipv4]                # unit "per month"
    [llm."<model name>"]               # unit "per million input tokens"; exactly two (CONTEXT_REFERENCE_LLMS)

A price that is not entered is *missing* (``PriceBook.get`` returns None; the tables say "price missing").
A malformed entry is a :class:`~analysis.costs.errors.CostInputError` naming the file, the line and the fix.
The reader accepts a UTF-8 byte-order mark and CRLF line ends.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from analysis.core.plan import CONTEXT_REFERENCE_LLMS
from analysis.costs.errors import CostInputError

__all__ = ["API_MODELS", "CURRENCIES", "DEFAULT_PRICES", "Price", "PriceBook", "read_prices"]

DEFAULT_PRICES: Final = "prices.toml"
CURRENCIES: Final = ("EUR", "USD")
API_MODELS: Final = ("voyage-rerank-3", "voyage-rerank-3-lite")  # == bench.core.plan.API_RERANKERS (tested)
SERVER_ITEMS: Final = ("ccx33-ipv4",)
UNITS: Final = MappingProxyType(
    {"api": "per million tokens", "server": "per month", "llm": "per million input tokens"}
)
FIELDS: Final = ("value", "currency", "unit", "date", "source")
_HEADER = re.compile(r'^\s*\[\s*([A-Za-z0-9_-]+)\s*\.\s*(?:"([^"]*)"|([A-Za-z0-9_.-]+))\s*\]\s*(?:#.*)?$')
_ANY_HEADER = re.compile(r"^\s*\[")


@dataclass(frozen=True)
class Price:
    """One entered price. ``id`` is ``<group>/<name>``, e.g. ``api/voyage-rerank-3``."""

    id: str
    value: float
    currency: str
    unit: str
    date: dt.date
    source: str
    line: int

    def record(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "currency": self.currency,
            "unit": self.unit,
            "date": self.date.isoformat(),
            "source": self.source,
            "line": self.line,
        }


@dataclass(frozen=True)
class PriceBook:
    """The prices of one file (or none): ``path`` and ``sha256`` are None when no file was read."""

    path: str | None
    sha256: str | None
    prices: Mapping[str, Price]

    def get(self, price_id: str) -> Price | None:
        return self.prices.get(price_id)

    def llms(self) -> list[Price]:
        return [p for pid, p in sorted(self.prices.items()) if pid.startswith("llm/")]

    def record(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "sha256": self.sha256,
            "prices": {pid: p.record() for pid, p in sorted(self.prices.items())},
        }


EMPTY: Final = PriceBook(None, None, {})


def _lines(text: str) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], dict[str, int]]]:
    """Header line of each table and the line of each ``key =`` inside it (for messages)."""
    headers: dict[tuple[str, str], int] = {}
    keys: dict[tuple[str, str], dict[str, int]] = {}
    current: tuple[str, str] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        m = _HEADER.match(line)
        if m:
            current = (m.group(1), m.group(2) if m.group(2) is not None else m.group(3))
            headers.setdefault(current, number)
            keys.setdefault(current, {})
            continue
        if _ANY_HEADER.match(line):
            current = None
            continue
        km = re.match(r"^\s*([A-Za-z0-9_-]+)\s*=", line)
        if km and current is not None:
            keys[current].setdefault(km.group(1), number)
    return headers, keys


def _line_of_group(text: str, group: str) -> int | None:
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(rf"^\s*\[\s*{re.escape(group)}\s*[.\]]", line):
            return number
    return None


def read_prices(path: Path | str) -> PriceBook:
    """Read and validate ``path`` (see the module docstring); raises :class:`CostInputError`."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CostInputError(
            path,
            None,
            f"cannot read the prices file ({exc.strerror})",
            f"pass an existing file with --prices (default {DEFAULT_PRICES})",
        ) from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CostInputError(path, line, "not UTF-8", "save the prices file as UTF-8") from exc
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"at line (\d+)", str(exc))
        raise CostInputError(
            path,
            int(m.group(1)) if m else None,
            f"not valid TOML ({exc})",
            "write one [group.name] table per price with key = value lines",
        ) from exc
    headers, keys = _lines(text)
    prices: dict[str, Price] = {}
    for group, entries in doc.items():
        if group not in UNITS:
            raise CostInputError(
                path,
                _line_of_group(text, group),
                f"unknown price group [{group}]",
                f"use one of {', '.join(f'[{g}.<name>]' for g in UNITS)}",
            )
        if not isinstance(entries, dict):
            raise CostInputError(
                path, _line_of_group(text, group), f"{group} is not a table", f"write [{group}.<name>] tables"
            )
        for name, entry in entries.items():
            price = _price(path, group, name, entry, headers.get((group, name)), keys.get((group, name), {}))
            prices[price.id] = price
    llms = [p for p in prices.values() if p.id.startswith("llm/")]
    if len(llms) > CONTEXT_REFERENCE_LLMS:
        raise CostInputError(
            path,
            llms[CONTEXT_REFERENCE_LLMS].line,
            f"{len(llms)} reference LLMs; the plan has {CONTEXT_REFERENCE_LLMS}",
            f'keep exactly {CONTEXT_REFERENCE_LLMS} [llm."<name>"] tables',
        )
    return PriceBook(str(path), hashlib.sha256(data).hexdigest(), prices)


def _price(
    path: Path, group: str, name: str, entry: Any, header: int | None, keys: Mapping[str, int]
) -> Price:
    where = f"[{group}.{name}]"
    _check_name(path, group, name, header, where)
    _check_keys(path, entry, header, keys, where)
    value = _value(path, entry["value"], keys.get("value", header), where)
    currency = entry["currency"]
    if currency not in CURRENCIES:
        raise CostInputError(
            path,
            keys.get("currency", header),
            f"{where}: currency {currency!r}",
            f"use {' or '.join(CURRENCIES)} (other currencies are not converted)",
        )
    if entry["unit"] != UNITS[group]:
        raise CostInputError(
            path,
            keys.get("unit", header),
            f"{where}: unit {entry['unit']!r}",
            f"[{group}.*] prices are {UNITS[group]!r}; convert the list price to that unit",
        )
    date = _date(path, entry["date"], keys.get("date", header), where)
    source = _source(path, entry["source"], keys.get("source", header), where)
    return Price(f"{group}/{name}", float(value), currency, entry["unit"], date, source, header or 0)


def _check_name(path: Path, group: str, name: str, header: int | None, where: str) -> None:
    """An API model or server item the plan names; other groups take any name."""
    if group == "api" and name not in API_MODELS:
        raise CostInputError(
            path,
            header,
            f"{where}: unknown API model",
            f'use one of {", ".join(API_MODELS)} (PLAN.md, section "Rerankers")',
        )
    if group == "server" and name not in SERVER_ITEMS:
        raise CostInputError(
            path,
            header,
            f"{where}: unknown server item",
            f"use one of {', '.join(SERVER_ITEMS)}; the plan fixes the other server prices",
        )


def _check_keys(path: Path, entry: Any, header: int | None, keys: Mapping[str, int], where: str) -> None:
    """A table with exactly the keys of FIELDS."""
    if not isinstance(entry, dict):
        raise CostInputError(path, header, f"{where} is not a table", f"write {where} as its own table")
    missing = [f for f in FIELDS if f not in entry]
    if missing:
        raise CostInputError(
            path,
            header,
            f"{where} has no {', '.join(missing)}",
            f"every price needs {', '.join(FIELDS)} (date = the day it was read, "
            'source = the URL it was read from; quote a name with dots: [llm."name-1.5"])',
        )
    extra = sorted(set(entry) - set(FIELDS))
    if extra:
        raise CostInputError(
            path,
            keys.get(extra[0], header),
            f"{where}: unknown key {extra[0]!r}",
            f"use only {', '.join(FIELDS)}",
        )


MAX_VALUE = 1e100
"""No price may exceed this: far above any list price, far enough below the largest float (1.8e308) that every
cost computed from it (a price times token counts, queries and months) stays finite."""


def _value(path: Path, value: Any, line: int | None, where: str) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CostInputError(
            path,
            line,
            f"{where}: value {value!r} is not a number",
            "write the price as a plain number, e.g. value = 0.05 (no quotes, no currency)",
        )
    if value < 0:
        raise CostInputError(
            path,
            line,
            f"{where}: negative price {value!r}",
            "enter the list price as a number >= 0",
        )
    if value > MAX_VALUE:  # 1e308 would make the costs infinite, refused only when costs.json is written
        shown = f"{value:.6g}" if isinstance(value, float) else f"an integer of {len(str(value))} digits"
        raise CostInputError(
            path,
            line,
            f"{where}: value {shown}, far above any price (at most {MAX_VALUE:g}; the costs computed from it "
            "would overflow)",
            "enter the list price in the unit of its group (a typo or a unit error?)",
        )
    return value


def _date(path: Path, raw: Any, line: int | None, where: str) -> dt.date:
    """A TOML date, or an ISO date string; a datetime is refused."""
    date = raw
    if isinstance(date, str):
        try:
            date = dt.date.fromisoformat(date)
        except ValueError:
            date = None
    if not isinstance(date, dt.date) or isinstance(date, dt.datetime):
        raise CostInputError(
            path,
            line,
            f"{where}: date {raw!r}",
            "write the day the price was read as date = YYYY-MM-DD",
        )
    return date


def _source(path: Path, source: Any, line: int | None, where: str) -> str:
    if not isinstance(source, str) or not re.match(r"^https?://\S+$", source):
        raise CostInputError(
            path,
            line,
            f"{where}: source {source!r} is not a URL",
            'write the page the price was read from, source = "https://..."',
        )
    return source
