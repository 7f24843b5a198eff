"""Ctrl-C, SIGTERM and SIGHUP end a phase cleanly: clear message, non-zero exit, journal valid and resumable.

``interruptible`` turns SIGTERM and SIGHUP (the terminal was closed) into ``KeyboardInterrupt`` for the
duration of the block, so all three take the same path: the unit of work in flight writes nothing
(``bench.core.journal`` holds only fsynced, complete records), context managers stop servers and close the
journal, and the caller records the session as ``interrupted`` and raises ``Interrupted`` (a ``BenchError``
with exit code 130, the shell's code for SIGINT) whose message says how to resume. SIGKILL cannot be caught;
the journal's torn-line recovery covers it, and the local Typesense stops itself when its parent dies
(``bench.firststage.launcher``).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from bench.core.errors import BenchError

EXIT_INTERRUPTED = 130


class Interrupted(BenchError):
    def __init__(self, what: str, resume_hint: str) -> None:
        super().__init__(
            f"{what} interrupted. Everything written so far is complete and valid (the unit of work in "
            f"flight was discarded, not recorded). Resume with: {resume_hint}",
            exit_code=EXIT_INTERRUPTED,
        )


_pending: list[str] = []  # signals received in this process, kept even if a library swallowed the interrupt


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    name = signal.Signals(signum).name
    _pending.append(name)
    raise KeyboardInterrupt(f"signal {name}")


def raise_if_interrupted() -> None:
    """Raise ``KeyboardInterrupt`` again if a signal arrived inside ``interruptible`` and its interrupt was
    lost: a library that wraps an optional import or a call in a bare ``except:`` swallows it, and the
    command would run on. Long commands call this between their steps."""
    if _pending:
        raise KeyboardInterrupt(f"signal {_pending[-1]} (received earlier)")


# Signals that end a command: Ctrl-C (SIGINT), SIGTERM (kill, docker stop) and SIGHUP (terminal closed).
CAUGHT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM and SIGHUP raise ``KeyboardInterrupt`` inside the block (main thread only); restored
    afterwards."""
    previous: dict[signal.Signals, Any] = {}
    try:
        for sig in CAUGHT_SIGNALS:
            previous[sig] = signal.signal(sig, _raise_interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    outermost = previous[signal.SIGINT] is not _raise_interrupt
    if outermost:  # a command's signals count only inside its own block
        _pending.clear()
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if outermost:
            _pending.clear()


@contextmanager
def whole_command(what: str, resume_hint: str) -> Iterator[None]:
    """Around a whole command: Ctrl-C/SIGTERM/SIGHUP outside the phase (lock check, loading, report) also ends
    with ``Interrupted`` (exit 130) instead of a traceback; ``Interrupted`` from inside passes unchanged."""
    try:
        with interruptible():
            yield
    except KeyboardInterrupt:
        raise Interrupted(what, resume_hint) from None
