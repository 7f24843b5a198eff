"""bench.core.backoff: Retry-After in both RFC 9110 forms (delta-seconds, HTTP-date in GMT whatever the local
time zone), unreadable values, and the back-off rule shared by the Voyage client and the Anthropic judge."""

from __future__ import annotations

import os
import time

import pytest

from bench.core.backoff import backoff_s, retry_after_s
from bench.judged import judge

NOW = 1795946400.0  # 2026-11-29 10:00:00 UTC


@pytest.fixture
def far_time_zone():
    """A local time zone far from UTC, so a date read as local time instead of GMT would be off by hours."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "Pacific/Kiritimati"  # UTC+14
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


def test_delta_seconds() -> None:
    assert retry_after_s("3") == 3.0
    assert retry_after_s(" 120 ") == 120.0
    assert retry_after_s("0") == 0.0
    assert retry_after_s("1.5") == 1.5  # not RFC, tolerated


@pytest.mark.usefixtures("far_time_zone")
@pytest.mark.parametrize(
    "value",
    [
        "Sun, 29 Nov 2026 10:00:10 GMT",  # IMF-fixdate, the form RFC 9110 asks senders to use
        "Sunday, 29-Nov-26 10:00:10 GMT",  # obsolete RFC 850 form
        "Sun Nov 29 10:00:10 2026",  # obsolete asctime form: no zone, and still GMT
        "Sun, 29 Nov 2026 10:00:10 -0000",  # "-0000" (email.utils gives a naive datetime): GMT too
    ],
)
def test_http_date_is_gmt(value: str) -> None:
    assert retry_after_s(value, now=NOW) == pytest.approx(10.0)


def test_http_date_against_the_clock() -> None:
    # the judge used to subtract an aware "now" from this naive date and raise TypeError
    assert retry_after_s("Sun Nov 29 10:00:10 2026") == 0.0  # long past by the time this runs


def test_past_date_is_zero() -> None:
    assert retry_after_s("Sun, 29 Nov 2026 09:59:00 GMT", now=NOW) == 0.0


@pytest.mark.parametrize("value", [None, "", "soon", "-5", "+5", "nan", "inf", "1e3", "Sun, 99 Foo 2026"])
def test_unreadable_is_none(value: str | None) -> None:
    assert retry_after_s(value, now=NOW) is None


def test_backoff_doubles_up_to_the_cap() -> None:
    assert [backoff_s(n, base_s=2.0, cap_s=60.0) for n in range(1, 8)] == [2, 4, 8, 16, 32, 60, 60]


def test_backoff_honours_retry_after() -> None:
    assert backoff_s(1, base_s=2.0, cap_s=60.0, retry_after=7.0) == 7.0
    assert backoff_s(3, base_s=2.0, cap_s=60.0, retry_after=7.0) == 8.0  # the back-off is longer
    assert backoff_s(1, base_s=2.0, cap_s=60.0, retry_after=500.0) == 500.0  # no guard: in full
    assert backoff_s(1, base_s=1.0, cap_s=60.0, retry_after=500.0, max_wait_s=120.0) == 120.0  # guarded


def test_backoff_refuses_a_count_below_one() -> None:
    with pytest.raises(ValueError, match="starts at 1"):
        backoff_s(0, base_s=1.0, cap_s=1.0)


def test_the_judge_uses_it_with_its_constants() -> None:
    assert judge.backoff_s(3, None) == backoff_s(3, base_s=judge.BACKOFF_BASE_S, cap_s=judge.BACKOFF_CAP_S)
    assert judge.backoff_s(1, 30.0) == 30.0
