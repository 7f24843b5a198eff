"""bench.core.clock: the one "UTC now" and its formats (those the records already carried before it
existed)."""

from __future__ import annotations

import datetime as dt

from bench.core import clock

WHEN = dt.datetime(2026, 12, 1, 11, 44, 4, 123456, tzinfo=dt.UTC)
BERLIN = dt.timezone(dt.timedelta(hours=1))


def test_formats_of_a_fixed_time() -> None:
    assert clock.utc_iso(when=WHEN) == "2026-12-01T11:44:04+00:00"
    assert clock.utc_iso("milliseconds", WHEN) == "2026-12-01T11:44:04.123+00:00"
    assert clock.utc_z(when=WHEN) == "2026-12-01T11:44:04Z"
    assert clock.utc_z("microseconds", WHEN) == WHEN.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert clock.stamp(WHEN) == "20261201T114404Z"
    assert clock.stamp(WHEN, seconds=False) == "20261201T1144Z"


def test_other_offsets_are_converted_to_utc() -> None:
    local = WHEN.astimezone(BERLIN)
    assert local.hour == 12
    assert clock.utc_iso(when=local) == "2026-12-01T11:44:04+00:00"
    assert clock.stamp(local) == "20261201T114404Z"


def test_now_is_aware_utc_and_brackets_the_system_clock() -> None:
    before = dt.datetime.now(dt.UTC)
    got = clock.now()
    after = dt.datetime.now(dt.UTC)
    assert got.utcoffset() == dt.timedelta(0) and before <= got <= after
    assert clock.today() in (before.date(), after.date())
    assert dt.datetime.fromisoformat(clock.utc_iso()).tzinfo is not None
