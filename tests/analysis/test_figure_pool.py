"""The stage figures drawn in worker processes (analysis.figure_pool, issue 34): the same pixels as in this
process, a worker's error raised here, a killed worker's figure drawn here, and the worker count's rule."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from analysis.figure_pool import FigurePool, figure_workers
from analysis.study import analyse_study, default_flags
from analysis.synthetic import write_study

Qrels = dict[str, dict[str, int]]


@pytest.fixture(scope="module")
def stages(tmp_path_factory: pytest.TempPathFactory, miracl_qrels: Qrels, miracl_qrels_path: Path) -> list:
    runs = tmp_path_factory.mktemp("pool") / "runs"
    write_study(runs, miracl_qrels, stages=["hybrid-71k", "keyword-71k"], models={"bge-v2-m3": 1.2,
                "gte-base": 1.1}, depths=(20, 100), tails=True)
    found, _ = analyse_study(runs, miracl_qrels_path)
    return found


def _draw_all(stages: list, out: Path, workers: int) -> dict[str, bytes]:
    with FigurePool(workers) as pool:
        for s in stages:
            pool.draw(s, out / f"{s.stage}.png", default_flags(), {})
        pool.finish()
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def test_workers_draw_the_same_bytes_as_this_process(stages: list, tmp_path: Path) -> None:
    here = _draw_all(stages, tmp_path / "here", 0)
    there = _draw_all(stages, tmp_path / "there", 2)
    assert sorted(here) == ["hybrid-71k.png", "keyword-71k.png"]
    assert all(b.startswith(b"\x89PNG\r\n\x1a\n") for b in here.values())
    assert here == there


def test_a_workers_error_is_raised_here(stages: list, tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the figure's folder should be")
    with FigurePool(1) as pool, pytest.raises((FileExistsError, NotADirectoryError)):
        pool.draw(stages[0], blocker / "figure.png", default_flags(), {})
        pool.finish()


def test_a_killed_worker_s_figure_is_drawn_here(stages: list, tmp_path: Path) -> None:
    with FigurePool(1) as pool:
        workers = pool._pool._processes if pool._pool is not None else {}  # type: ignore[attr-defined]
        assert workers, "the pool started no worker process"
        for pid in list(workers):
            os.kill(pid, signal.SIGKILL)
        pool.draw(stages[0], tmp_path / "a.png", default_flags(), {})
        pool.finish()
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_worker_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANALYSIS_FIGURE_WORKERS", "0")
    assert figure_workers(4) == 0
    monkeypatch.setenv("ANALYSIS_FIGURE_WORKERS", "3")
    assert figure_workers(4) == 3
    monkeypatch.delenv("ANALYSIS_FIGURE_WORKERS")
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0})
    assert figure_workers(4) == 0  # one usable CPU: drawn in this process
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3})
    assert figure_workers(4) == 2
    assert figure_workers(1) == 1
