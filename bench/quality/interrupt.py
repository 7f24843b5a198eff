"""Ctrl-C and SIGTERM end a phase cleanly: clear message, non-zero exit, journal valid and resumable.

``interruptible`` turns SIGTERM into ``KeyboardInterrupt`` for the duration of the block, so both take the
same path: the unit of work in flight writes nothing (``bench.journal`` holds only fsynced, complete
records), context managers stop servers and close the journal, and the caller records the session as
``interrupted`` and raises ``Interrupted`` (a ``BenchError`` with exit code 130, the shell's code for
SIGINT) whose message says how to resume. SIGKILL cannot be caught; the journal's torn-line recovery
covers it.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from bench.errors import BenchError

EXIT_INTERRUPTED = 130


class Interrupted(BenchError):
    def __init__(self, what: str, resume_hint: str) -> None:
        super().__init__(
            f"{what} interrupted. Everything written so far is complete and valid (the unit of work in "
            f"flight was discarded, not recorded). Resume with: {resume_hint}",
            exit_code=EXIT_INTERRUPTED,
        )


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM raises ``KeyboardInterrupt`` inside the block (main thread only); restored afterwards."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def whole_command(what: str, resume_hint: str) -> Iterator[None]:
    """Around a whole command: Ctrl-C/SIGTERM outside the phase (lock check, loading, report) also ends
    with ``Interrupted`` (exit 130) instead of a traceback; ``Interrupted`` from inside passes unchanged."""
    try:
        with interruptible():
            yield
    except KeyboardInterrupt:
        raise Interrupted(what, resume_hint) from None
