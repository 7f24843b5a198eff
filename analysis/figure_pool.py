"""The stage figures drawn in other processes while this one reads and analyses the runs (issue 34).

Importing matplotlib and drawing the four stage figures were about half of a cold full-size ``analysis
report``, all on one core of two. :class:`FigurePool` starts its worker processes (forkserver, like the run
readers of :mod:`analysis.study`) before the runs are read, so matplotlib is imported beside the reading; once
the statistics are done each stage's figure is drawn by a worker while this process writes the JSON, the
Markdown and the other sections, and :meth:`FigurePool.finish` waits for them before the build folder is
swapped in. A worker's error is raised here as it was raised there; nothing is swapped in without its figure.

The figures are the same pixels in whichever process they are drawn (tested). ``ANALYSIS_FIGURE_WORKERS``
sets the number of processes (``0``: draw in this process, as when only one CPU is usable or no process can be
started, e.g. in a sandbox).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analysis.study import StageResult

__all__ = ["FigurePool", "figure_workers"]

_Job = tuple["StageResult", Path, Mapping[str, str], Mapping[str, str]]  # stage_figure's arguments


def figure_workers(stages: int) -> int:
    """Processes drawing figures: ``ANALYSIS_FIGURE_WORKERS`` if set, else one per usable CPU (at most 2 and
    at most one per stage); 0 means this process draws them."""
    env = os.environ.get("ANALYSIS_FIGURE_WORKERS")
    if env is not None and env.strip():
        return max(0, int(env))
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 0 if usable < 2 else min(2, usable, max(stages, 1))


def _warm() -> None:
    """Run first in each worker: the slow import (matplotlib), before any figure is asked for."""
    import analysis.figures  # noqa: F401  matplotlib: the slow import, done before any figure is asked for


def _draw(stage: StageResult, path: Path, flags: Mapping[str, str], stage_flags: Mapping[str, str]) -> Path:
    from analysis.figures import stage_figure  # matplotlib: imported by the workers only (and _warm)

    return stage_figure(stage, path, flags, stage_flags)


class FigurePool:
    """Workers that draw stage figures; use as a context manager (the workers end with the block)."""

    def __init__(self, workers: int) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._pending: list[tuple[Future[Path], _Job]] = []
        if workers > 0:
            try:
                context = multiprocessing.get_context("forkserver")
                self._pool = ProcessPoolExecutor(workers, mp_context=context)
                for _ in range(workers):  # one process per submitted task while none is idle: all start now
                    self._pool.submit(_warm)
            except (OSError, BrokenProcessPool):  # no processes here (sandbox): draw in this process
                self._close()

    def __enter__(self) -> FigurePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self._close()

    def _close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def draw(self, stage: StageResult, path: Path, flags: Mapping[str, str],
             stage_flags: Mapping[str, str]) -> None:
        """Ask for one figure; drawn here at once when there is no worker."""
        args: _Job = (stage, path, dict(flags), dict(stage_flags))
        if self._pool is None:
            _draw(*args)
            return
        try:
            self._pending.append((self._pool.submit(_draw, *args), args))
        except (RuntimeError, BrokenProcessPool):  # the pool broke before this figure: draw it here
            self._close()
            _draw(*args)

    def finish(self) -> None:
        """Wait for every figure asked for; a worker's exception is raised here. A figure lost with a broken
        worker (a process killed from outside, not an error of the figure) is drawn in this process."""
        pending, self._pending = self._pending, []
        for future, args in pending:
            try:
                future.result()
            except BrokenProcessPool:
                _draw(*args)
