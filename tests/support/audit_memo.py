"""What the in-process audits of tests/audit and tests/review compute again and again, once per test process:
each stage figure's drawing for its numbers, and the bundled sample that audit row 7 reads.

Those folders run ``bench audit`` in process again and again on studies that differ in a manifest, a
deviation or one run file: each audit's row 5 recomputes the whole report (``analysis report``) and compares
its bytes with the committed ones, figures included, and drawing a stage's figure with matplotlib is most of
that recompute (about 0.2 s CPU a figure, three figures a study of tests/audit). A figure is a function of
its numbers alone (``analysis.figures.stage.StageFigure``, a frozen dataclass; the settings are fixed by
``analysis.figures.render.canvas``: same numbers, same bytes): :func:`memo_stage_figure` draws the figure of
numbers it has not seen with the report's own ``stage_figure`` and keeps its bytes; numbers equal to ones
drawn before get those bytes written to the new path, as drawing would. The numbers of a tampered run differ
and are drawn. A key that does not compare equal to itself (a NaN in it) is simply drawn again.

Audit row 7 (``bench.audit.committed.known_texts``) reads the repository's bundled MIRACL-de sample for the
query texts and passage openings a committed file must not hold (about 0.15 s CPU an audit); no test of these
folders changes that sample, so it is read once per process (``functools.cache``, as tests/doctor does for
``bench.firststage.preflight``); a reading that fails is not kept.

Only the tests install them (:func:`installed`, on ``analysis.reporting.report.stage_figure``, the name the
report calls, and on ``bench.audit.committed.load_sample``); ``analysis`` and ``bench`` always draw and read.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import analysis.reporting.report as report
import bench.audit.committed as committed
from analysis.figures.stage import StageFigure, stage_figure
from bench.data.bundled import load_sample

_DRAWN: dict[StageFigure, bytes] = {}
_SAMPLE = functools.cache(load_sample)


def memo_stage_figure(data: StageFigure, path: Path) -> Path:
    """``stage_figure(data, path)``: drawn once per process for each value of ``data``."""
    png = _DRAWN.get(data)
    if png is None:
        stage_figure(data, path)
        _DRAWN[data] = path.read_bytes()
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)
    return path


@contextmanager
def installed() -> Iterator[None]:
    """The report's ``stage_figure`` is :func:`memo_stage_figure` and the audit's ``load_sample`` reads once,
    inside the block."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report, "stage_figure", memo_stage_figure)
        patch.setattr(committed, "load_sample", _SAMPLE)
        yield
