"""The prices file reader: good entries, a missing price, and every kind of bad input with file, line, fix."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from analysis.costs.errors import CostInputError
from analysis.costs.prices import API_MODELS, read_prices

REPO = Path(__file__).resolve().parents[3]

GOOD = """\
# prices read on the measurement day
[api.voyage-rerank-3]
value = 0.05
currency = "USD"
unit = "per million tokens"
date = 2026-10-30
source = "https://example.org/pricing"

[server.ccx33-ipv4]
value = 0.5
currency = "EUR"
unit = "per month"
date = "2026-10-30"
source = "https://example.org/ipv4"

[llm."model-a 1.0"]
value = 3
currency = "USD"
unit = "per million input tokens"
date = 2026-10-29
source = "https://example.org/llm"
"""


def write(tmp_path: Path, text: str, *, bom: bool = False, crlf: bool = False) -> Path:
    if crlf:
        text = text.replace("\n", "\r\n")
    path = tmp_path / "prices.toml"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


@pytest.mark.parametrize(("bom", "crlf"), [(False, False), (True, True)])
def test_reads_prices_with_date_currency_source(tmp_path: Path, bom: bool, crlf: bool) -> None:
    book = read_prices(write(tmp_path, GOOD, bom=bom, crlf=crlf))
    voyage = book.get("api/voyage-rerank-3")
    assert voyage is not None and (voyage.value, voyage.currency, voyage.line) == (0.05, "USD", 2)
    assert voyage.date == dt.date(2026, 10, 30) and voyage.source == "https://example.org/pricing"
    ipv4 = book.get("server/ccx33-ipv4")
    assert ipv4 is not None and ipv4.date == dt.date(2026, 10, 30) and ipv4.value == 0.5
    assert [p.id for p in book.llms()] == ["llm/model-a 1.0"] and book.llms()[0].value == 3.0
    assert book.get("api/voyage-rerank-3-lite") is None  # not entered: missing, never 0
    assert book.record()["sha256"] == book.sha256 and len(book.sha256 or "") == 64


def test_the_committed_prices_file_reads_and_holds_no_invented_price() -> None:
    book = read_prices(REPO / "prices.toml")
    for price in book.prices.values():  # whatever the author entered carries its date and source
        assert price.source.startswith("http") and price.date.year >= 2026


def test_api_models_are_the_plans() -> None:
    from bench.core.plan import API_RERANKERS

    assert API_MODELS == API_RERANKERS


BAD = [
    ("source", 'source = "https://example.org/pricing"\n', "", 2, "has no source"),
    ("date", "date = 2026-10-30\n", "", 2, "has no date"),
    ("negative", "value = 0.05", "value = -0.05", 3, "negative price"),
    ("string", "value = 0.05", 'value = "0.05"', 3, "is not a number"),
    ("currency", 'currency = "USD"', 'currency = "CHF"', 4, "currency 'CHF'"),
    ("unit", 'unit = "per million tokens"', 'unit = "per 1k tokens"', 5, "unit 'per 1k tokens'"),
    ("bad date", "date = 2026-10-30\n", 'date = "30.10.2026"\n', 6, "date '30.10.2026'"),
    ("not a url", 'source = "https://example.org/pricing"', 'source = "the website"', 7, "is not a URL"),
    ("model", "[api.voyage-rerank-3]", "[api.voyage-rerank-9]", 2, "unknown API model"),
    ("group", "[api.voyage-rerank-3]", "[gpu.voyage-rerank-3]", 2, "unknown price group"),
    ("toml", "value = 0.05", "value = ", 3, "not valid TOML"),
]


@pytest.mark.parametrize(("what", "old", "new", "line", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_entries_name_file_line_and_fix(
    tmp_path: Path, what: str, old: str, new: str, line: int, message: str
) -> None:
    path = write(tmp_path, GOOD.replace(old, new, 1), crlf=what == "currency")
    with pytest.raises(CostInputError) as info:
        read_prices(path)
    assert info.value.line == line and message in str(info.value)
    assert str(info.value).startswith(f"{path}:{line}: ") and "Fix: " in str(info.value)


def test_three_reference_llms_are_refused(tmp_path: Path) -> None:
    llm = GOOD[GOOD.index("[llm.") :]
    text = GOOD + "\n" + llm.replace("model-a", "model-b") + "\n" + llm.replace("model-a", "model-c")
    with pytest.raises(CostInputError, match="3 reference LLMs; the plan has 2"):
        read_prices(write(tmp_path, text))


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(CostInputError, match="cannot read the prices file"):
        read_prices(tmp_path / "absent.toml")
