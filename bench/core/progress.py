"""Progress on stderr for long work: items done, rate, ETA (developers' guide: long work shows progress)."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO


def _fmt_seconds(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):
        return "?"
    whole = round(seconds)
    h, rem = divmod(whole, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Prints ``label: done/total items, rate/s, ETA`` to stderr at most every ``interval`` seconds.

    Use as a context manager; ``advance(n)`` after each unit of work. The final line is always printed.
    """

    def __init__(
        self,
        label: str,
        total: int | None,
        unit: str = "items",
        *,
        interval: float = 2.0,
        stream: TextIO | None = None,
        initial: int = 0,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.interval = interval
        self.stream = stream if stream is not None else sys.stderr
        self.done = initial
        self._initial = initial
        self._start = time.perf_counter()
        self._last = 0.0

    def __enter__(self) -> Progress:
        self._start = time.perf_counter()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._emit(final=True, interrupted=exc_type is not None)

    def skip(self, n: int) -> None:
        """Count ``n`` items found done already (a cache, a checkpoint): done, but not in the rate."""
        self.done += n
        self._initial += n

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.perf_counter()
        if now - self._last >= self.interval:
            self._last = now
            self._emit()

    def line(self) -> str:
        elapsed = time.perf_counter() - self._start
        new = self.done - self._initial
        rate = new / elapsed if elapsed > 0 else 0.0
        total = f"/{self.total}" if self.total is not None else ""
        eta = ""
        if self.total is not None and rate > 0:
            eta = f", ETA {_fmt_seconds((self.total - self.done) / rate)}"
        return (
            f"{self.label}: {self.done}{total} {self.unit}, {rate:.1f}/s, "
            f"elapsed {_fmt_seconds(elapsed)}{eta}"
        )

    def _emit(self, final: bool = False, interrupted: bool = False) -> None:
        suffix = " (interrupted)" if interrupted else (" (done)" if final else "")
        print(self.line() + suffix, file=self.stream, flush=True)
