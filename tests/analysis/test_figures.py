"""The stage figure drawn with Pillow (analysis.figures, analysis.raster): its size, that a rerun
writes the same bytes, that each run's point lands where its value says (in both panels) with its verdict's
marker, the tick rule, the legend placement and the refusal when the font is missing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from analysis import raster
from analysis.figures import (
    _COLOURS,
    VERDICT_MARKERS,
    _panels,
    _x_range,
    figure_size,
    paired_differences_vs_first,
    stage_figure,
)
from analysis.raster import Panel, nice_ticks, tick_label
from analysis.reporting.study import analyse_study, default_flags
from analysis.simulation.synthetic import write_study

Qrels = dict[str, dict[str, int]]


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory, miracl_qrels: Qrels, miracl_qrels_path: Path):  # type: ignore[no-untyped-def]
    runs = tmp_path_factory.mktemp("fig") / "runs"
    # one strong model (clearly better), one barely better than the first stage (on par at most)
    write_study(
        runs,
        miracl_qrels,
        stages=["hybrid-71k"],
        models={"bge-v2-m3": 2.5, "gte-base": 1.02},
        depths=(20, 100),
        tails=True,
    )
    stages, _ = analyse_study(runs, miracl_qrels_path)
    return stages[0]


def _rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)


def test_size_is_the_matplotlib_versions_and_a_rerun_writes_the_same_bytes(stage, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    a = stage_figure(stage, tmp_path / "a.png", default_flags(), {})
    b = stage_figure(stage, tmp_path / "b.png", default_flags(), {})
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(a) as im:
        assert im.size == figure_size(1 + len(stage.runs)) == (1100, round(100 * (1.4 + 0.22 * 5)))
        assert not im.info  # no metadata: no software name, no time
    assert figure_size(7) == (1100, 294)  # tests/golden/report/figures.txt, as matplotlib drew it


def test_each_point_is_where_its_value_says_with_its_verdicts_marker(stage, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = stage_figure(stage, tmp_path / "s.png", default_flags(), {})
    pixels = np.asarray(Image.open(path).convert("RGB"), dtype=float)
    runs = [stage.first_stage, *stage.runs]
    ax, dax = _panels(*figure_size(len(runs)))
    ax.ymin = dax.ymin = -0.5
    ax.ymax = dax.ymax = len(runs) - 0.5
    _x_range(
        ax,
        [100 * stage.first_stage.means["ndcg@10"], *(100 * v for r in runs for v in r.intervals["ndcg@10"])],
    )
    diffs = paired_differences_vs_first(stage)
    _x_range(dax, [*(float(d[k]) for d in diffs for k in ("low", "high")), 0.0])  # type: ignore[arg-type]
    verdicts = set()
    for i, r in enumerate(runs):
        y = ax.y(float(len(runs) - 1 - i))
        colour = "#555555" if r.depth is None else _COLOURS[r.depth]
        x = ax.x(100 * r.means["ndcg@10"])
        centre = pixels[round(y), round(x)]
        assert np.abs(centre - _rgb(colour)).max() < 40, (r.model, r.depth, centre)
        if r.model is None:
            continue
        d = next(d for d in diffs if d["run"] is r)
        marker, filled = VERDICT_MARKERS[str(d["verdict"])]
        verdicts.add(d["verdict"])
        # the triangle's centroid is a third of its height from its base: sample there for both kinds
        dy = {"^": 1.5, "v": -1.5, "o": 0.0}[marker]
        centre = pixels[round(y + dy), round(dax.x(float(d["mean"])))]  # type: ignore[arg-type]
        want = _rgb(colour) if filled else _rgb("#ffffff")
        assert np.abs(centre - want).max() < 40, (r.model, r.depth, d["verdict"], centre)
    assert "clearly better" in verdicts and verdicts - {"clearly better"}, verdicts  # filled and open markers


def test_labels_with_marks_render_glyphs() -> None:
    font = raster._font(7)
    for mark in ("†", "‡", "Δ", "≥", "\u2212"):
        assert font.getmask(mark).getbbox() is not None, mark  # DejaVu Sans has the glyph: no empty box


@pytest.mark.parametrize(
    ("low", "high", "ticks", "decimals"),
    [
        (0.0, 1.0, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0], 1),
        (18.2, 73.9, [20.0, 30.0, 40.0, 50.0, 60.0, 70.0], 0),
        (-4.1, 47.5, [0.0, 10.0, 20.0, 30.0, 40.0], 0),
        (0.0, 2.4, [0.0, 0.5, 1.0, 1.5, 2.0], 1),
        (-0.01, 0.012, [-0.01, -0.005, 0.0, 0.005, 0.01], 3),
    ],
)
def test_ticks_step_one_two_two_and_a_half_or_five(
    low: float, high: float, ticks: list[float], decimals: int
) -> None:
    got, places = nice_ticks(low, high)
    assert got == pytest.approx(ticks, abs=1e-12) and places == decimals
    assert tick_label(-5.0, 0) == "\u22125" and tick_label(-0.0001, 1) == "0.0"
    assert tick_label(2.5, 1) == "2.5"


def test_the_legend_goes_to_the_corner_without_points(tmp_path: Path) -> None:
    canvas = raster.Canvas(400, 300)
    panel = Panel(20, 20, 380, 280)
    from analysis.figures import _legend

    # points in the top-right corner: the legend goes to the top left (the next corner in the order)
    _legend(canvas, panel, {"clearly better", "on par"}, [(370.0, 30.0), (360.0, 40.0)])
    xs = [x for x, *_ in canvas.texts]
    assert xs and max(xs) < 200, canvas.texts


def test_a_missing_font_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    raster.font_path.cache_clear()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(RuntimeError, match="uv sync --locked"):
        raster.font_path()
    raster.font_path.cache_clear()
