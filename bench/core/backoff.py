"""Retry-After and exponential back-off: the one rule of the HTTP clients that retry (the Voyage rerank API,
``bench.rerankers.voyage``; the Anthropic judge, ``bench.judged.judge``). Plan: Rerankers (API retries) and
the judged sample. A leaf of bench's shared core (it imports only ``bench.core.clock``).

``Retry-After`` (RFC 9110, section 10.2.3) is either delta-seconds (``1*DIGIT``) or an HTTP-date, and an
HTTP-date is always GMT (section 5.6.7), also in its obsolete RFC 850 and asctime forms, which name no zone
or none that ``email.utils`` reads as aware: such a date is read as UTC, never as local time. A value that is
neither (a sign, ``nan``, ``inf``, words) is unreadable and gives None, so the caller's own back-off applies.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re

from bench.core import clock

_DELTA_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")  # RFC: digits; a decimal fraction is tolerated


def retry_after_s(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header value (delta-seconds or HTTP-date); None if absent or
    unreadable. A date in the past gives 0. ``now`` (a POSIX timestamp) is for tests; default:
    ``bench.core.clock``."""
    if value is None:
        return None
    value = value.strip()
    if _DELTA_SECONDS.fullmatch(value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000" and the asctime form: HTTP-dates are GMT (RFC 9110 5.6.7)
        when = when.replace(tzinfo=dt.UTC)
    current = clock.now().timestamp() if now is None else now
    return max(0.0, when.timestamp() - current)


def backoff_s(
    failures: int,
    *,
    base_s: float,
    cap_s: float,
    retry_after: float | None = None,
    max_wait_s: float | None = None,
) -> float:
    """The wait before the next attempt after ``failures`` failed ones (1 for the first): ``base_s`` doubling
    per failure, at most ``cap_s``; at least the server's ``retry_after`` (itself at most ``max_wait_s``
    when given, a guard against absurd values)."""
    if failures < 1:
        raise ValueError(f"failures counts failed attempts and starts at 1, got {failures}")
    wait = min(cap_s, base_s * 2 ** (failures - 1))
    if retry_after is None:
        return wait
    return max(wait, retry_after if max_wait_s is None else min(retry_after, max_wait_s))
