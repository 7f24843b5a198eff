"""The one wall clock of ``bench``: every "UTC now" a record, a journal line or a folder name carries comes
from :func:`now`, formatted by one of the helpers below (the formats are those the records already use).
Durations are never taken from here: they use ``time.perf_counter_ns`` (STYLE.md, Records). A leaf of
bench's shared core: it imports nothing of the project. ``analysis`` reads times, it never takes them.
"""

from __future__ import annotations

import datetime as dt


def now() -> dt.datetime:
    """The current time, timezone-aware, in UTC."""
    return dt.datetime.now(dt.UTC)


def today() -> dt.date:
    """Today's date in UTC."""
    return now().date()


def utc_iso(timespec: str = "seconds", when: dt.datetime | None = None) -> str:
    """ISO 8601 with an explicit offset, e.g. ``2026-12-01T11:44:04+00:00`` (``timespec`` as in
    ``datetime.isoformat``: ``seconds``, ``milliseconds``, ``microseconds``)."""
    return (now() if when is None else when.astimezone(dt.UTC)).isoformat(timespec=timespec)


def utc_z(timespec: str = "seconds", when: dt.datetime | None = None) -> str:
    """ISO 8601 with ``Z`` for UTC, e.g. ``2026-12-01T11:44:04.123456Z`` (``timespec="microseconds"``)."""
    return utc_iso(timespec, when).removesuffix("+00:00") + "Z"


def stamp(when: dt.datetime | None = None, *, seconds: bool = True) -> str:
    """A compact UTC stamp for folder and session names: ``20261201T114404Z`` (``seconds=False``:
    ``20261201T1144Z``); sorts as time does."""
    return (now() if when is None else when.astimezone(dt.UTC)).strftime(
        "%Y%m%dT%H%M%SZ" if seconds else "%Y%m%dT%H%MZ"
    )
