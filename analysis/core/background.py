"""Work started now on a daemon thread, its result taken later: :func:`soon`.

``analysis report`` makes the code record and draws the resample matrices while the runs are read, and once
they are scored runs plan check 2 and the statistics beside the reordering check
(:mod:`analysis.reporting.report`, :func:`analysis.reporting.study.analyse_study`): Python work that
overlaps work which runs without the interpreter lock (pyarrow's CSV reader, hashing, numpy). A daemon
thread, so that a report that fails on bad input exits at once instead of waiting for work whose result
nobody takes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["soon"]


def soon(name: str, func: Callable[..., T], *args: Any) -> Future[T]:
    """``func(*args)`` started on a daemon thread called ``name``; ``.result()`` waits for its value (or
    raises what it raised)."""
    future: Future[T] = Future()
    future.set_running_or_notify_cancel()

    def run() -> None:
        try:
            future.set_result(func(*args))
        except BaseException as exc:  # handed to whoever takes the result
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future
