"""Every figure of the report is drawn by matplotlib in analysis.figures, from the report's numbers.

Checked on the drawn artists, not on pixels: each run's point and interval ends in the stage figure are the
report's mean and bootstrap interval (points), its label is the table's run label, each reranked run's
paired difference carries its Holm verdict's marker and fill; the decision figure puts each option of
costs.json (the golden file's) at its p95 and nDCG@10 with its interval, its marker by k, filled when the
live-search budget is met; the latency figure draws the medians over passes. And the PNG: fixed size, the
same bytes for the same numbers (whatever the user's matplotlib settings or the figures drawn before with the
same renderer), other bytes for other numbers, no
text chunk (no software name, no time) until the report adds its analysis_code chunk."""

from __future__ import annotations

import json
import struct
import threading
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from analysis.core.plan import LATENCY_BUDGET_CHAT_P95_MS, LATENCY_BUDGET_LIVE_P95_MS
from analysis.figures.costs import COLOURS as MACHINE_COLOURS
from analysis.figures.costs import MARKERS, decision_figure, draw_decision
from analysis.figures.latency import Series, draw_latency, latency_figure
from analysis.figures.render import FONT, canvas, font_file
from analysis.figures.stage import (
    COLOURS,
    FIRST_STAGE_COLOUR,
    VERDICT_MARKERS,
    StageFigure,
    draw_stage,
    figure_size,
    stage_figure,
    stage_numbers,
)
from analysis.latency.report import figure_series
from analysis.reporting.codeinfo import read_record, well_formed, with_record
from analysis.reporting.study import (
    StageResult,
    analyse_study,
    default_flags,
    paired_differences_vs_first,
    run_label,
)
from analysis.simulation.synthetic import write_study

Qrels = dict[str, dict[str, int]]
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "report"
PNG = b"\x89PNG\r\n\x1a\n"
RECORD = {"analysis_digest": "a" * 64, "commit": "b" * 40, "dirty": False, "packages_digest": "c" * 64}


@pytest.fixture(scope="module")
def stage(
    tmp_path_factory: pytest.TempPathFactory, miracl_qrels: Qrels, miracl_qrels_path: Path
) -> StageResult:
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


@pytest.fixture(scope="module")
def numbers(stage: StageResult) -> StageFigure:
    return stage_numbers(stage, paired_differences_vs_first(stage), default_flags(), {})


def chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """(type, body) of every PNG chunk, each CRC checked."""
    assert data[:8] == PNG
    out, at = [], 8
    while at < len(data):
        (size,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + size]
        assert struct.unpack(">I", data[at + 8 + size : at + 12 + size])[0] == zlib.crc32(kind + body)
        out.append((kind, body))
        at += 12 + size
    assert out[-1][0] == b"IEND"
    return out


def png_size(data: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", chunks(data)[0][1][:8])
    return width, height


def assert_bare_png(data: bytes) -> None:
    """No text, time or other metadata chunk: image data, its physical size and nothing more."""
    kinds = {kind for kind, _ in chunks(data)}
    assert kinds <= {b"IHDR", b"pHYs", b"IDAT", b"IEND"}, kinds
    assert b"matplotlib" not in data.lower() and b"Software" not in data and b"tIME" not in data


def bars(ax: Any) -> list[tuple[float, float, float]]:
    """(y, low end, high end) of every horizontal error bar drawn into ``ax``, sorted."""
    out = []
    for container in ax.containers:
        _, _, (barlines,) = container.lines
        for segment in barlines.get_segments():
            (x0, y0), (x1, y1) = segment
            assert y0 == y1
            out.append((float(y0), float(x0), float(x1)))
    return sorted(out)


def test_size_and_the_same_bytes_on_a_rerun_and_other_bytes_for_other_numbers(
    numbers: StageFigure, tmp_path: Path
) -> None:
    a = stage_figure(numbers, tmp_path / "a.png").read_bytes()
    moved = StageFigure(numbers.stage, numbers.first_stage + 0.5, numbers.rows, numbers.differences)
    assert stage_figure(moved, tmp_path / "c.png").read_bytes() != a
    # b drawn with the renderer that drew the other numbers just before (render.canvas: one per size and
    # thread), the same bytes as a fresh renderer's (a new thread's first figure has its own)
    b = stage_figure(numbers, tmp_path / "b.png").read_bytes()
    assert a == b
    assert png_size(a) == figure_size(len(numbers.rows)) == (1100, round(100 * (1.4 + 0.22 * 5)))
    assert figure_size(7) == (1100, 294)  # tests/golden/report/figures.txt
    assert_bare_png(a)
    with canvas(2.0, 1.0, 50) as one, canvas(2.0, 1.0, 50) as two:
        assert one.canvas.get_renderer() is two.canvas.get_renderer()  # type: ignore[attr-defined]
    fresh: list[bytes] = []
    thread = threading.Thread(
        target=lambda: fresh.append(stage_figure(numbers, tmp_path / "d.png").read_bytes())
    )
    thread.start()
    thread.join()
    assert fresh == [a]


def test_the_users_matplotlib_settings_change_no_byte(numbers: StageFigure, tmp_path: Path) -> None:
    import matplotlib  # heavy: not at collection

    before = stage_figure(numbers, tmp_path / "a.png").read_bytes()
    with matplotlib.rc_context(
        {"font.family": "serif", "font.size": 20, "lines.linewidth": 5, "axes.grid": True, "figure.dpi": 30}
    ):
        styled = stage_figure(numbers, tmp_path / "b.png").read_bytes()
        assert matplotlib.rcParams["font.size"] == 20  # restored after the drawing
    assert styled == before


def test_the_report_adds_its_analysis_code_chunk_and_nothing_else(
    numbers: StageFigure, tmp_path: Path
) -> None:
    data = stage_figure(numbers, tmp_path / "s.png").read_bytes()
    stamped = with_record("figures/s.png", data, RECORD)
    assert read_record("figures/s.png", stamped) == RECORD and well_formed(RECORD)
    texts = [body for kind, body in chunks(stamped) if kind in (b"tEXt", b"iTXt", b"zTXt")]
    assert len(texts) == 1 and texts[0].startswith(b"analysis_code\0")
    assert read_record("figures/s.png", data) is None


def test_the_font_is_dejavu_sans_as_matplotlib_ships_it_with_every_mark() -> None:
    import matplotlib  # heavy: not at collection
    from matplotlib.ft2font import FT2Font

    with canvas(1, 1, 100):
        path = font_file()
    assert path.name == "DejaVuSans.ttf" and FONT == "DejaVu Sans"
    assert Path(matplotlib.get_data_path()) in path.parents  # not a system copy
    font = FT2Font(str(path))
    for mark in ("†", "‡", "Δ", "≥", "\u2212", "€", "·"):
        assert font.get_char_index(ord(mark)) != 0, mark


def test_each_run_is_drawn_at_the_reports_mean_and_interval_with_its_label(
    stage: StageResult, numbers: StageFigure
) -> None:
    runs = [stage.first_stage, *stage.runs]
    with canvas(11, 2.5, 100) as fig:
        ax, _ = draw_stage(fig, numbers)
        points = sorted(
            (float(y), float(x), c.lines[0].get_color())
            for c in ax.containers
            for x, y in zip(*c.lines[0].get_data(), strict=True)
        )
        labels = {float(t.get_position()[1]): t.get_text() for t in ax.texts}
        drawn = bars(ax)
        first_line = [ln.get_xdata()[0] for ln in ax.lines if ln.get_linestyle() == "--"]
    want_points, want_bars = [], []
    for i, r in enumerate(runs):
        y = float(len(runs) - 1 - i)
        low, high = (100 * v for v in r.intervals["ndcg@10"])
        colour = FIRST_STAGE_COLOUR if r.depth is None else COLOURS[r.depth]
        want_points.append((y, 100 * r.means["ndcg@10"], colour))
        want_bars.append((y, low, high))
        assert labels[y] == run_label(r, default_flags(), {})
    want_points.sort()
    np.testing.assert_allclose([p[:2] for p in points], [p[:2] for p in want_points], rtol=0, atol=1e-9)
    assert [p[2] for p in points] == [p[2] for p in want_points]
    np.testing.assert_allclose(drawn, sorted(want_bars), rtol=0, atol=1e-9)
    assert first_line == pytest.approx([100 * stage.first_stage.means["ndcg@10"]])


def test_each_paired_difference_carries_its_verdicts_marker(stage: StageResult, numbers: StageFigure) -> None:
    runs = [stage.first_stage, *stage.runs]
    paired = {id(d["run"]): d for d in paired_differences_vs_first(stage)}
    with canvas(11, 2.5, 100) as fig:
        _, dax = draw_stage(fig, numbers)
        markers = {
            (float(y), round(float(x), 9)): (line.get_marker(), line.get_markerfacecolor(), line.get_color())
            for line in dax.lines
            if line.get_marker() not in (None, "None", "")
            for x, y in zip(*line.get_data(), strict=True)
        }
        drawn = bars(dax)
        legend = [t.get_text() for t in dax.get_legend().get_texts()]
    verdicts = []
    want_bars = []
    for i, r in enumerate(runs[1:], start=1):
        d = paired[id(r)]
        y = float(len(runs) - 1 - i)
        marker, filled = VERDICT_MARKERS[str(d["verdict"])]
        got = markers[(y, round(float(d["mean"]), 9))]  # type: ignore[arg-type]
        assert got[0] == marker and got[2] == COLOURS[r.depth]  # type: ignore[index]
        assert got[1] == (COLOURS[r.depth] if filled else "white")  # type: ignore[index]
        want_bars.append((y, float(d["low"]), float(d["high"])))  # type: ignore[arg-type]
        verdicts.append(str(d["verdict"]))
    np.testing.assert_allclose(drawn, sorted(want_bars), rtol=0, atol=1e-9)
    assert "clearly better" in verdicts and set(verdicts) - {"clearly better"}  # filled and open markers
    assert legend == [v for v in VERDICT_MARKERS if v in verdicts]


def golden_costs(stage: str) -> tuple[list[dict[str, Any]], float]:
    costs = json.loads((GOLDEN / "costs.json").read_text(encoding="utf-8"))
    quality = json.loads((GOLDEN / "quality" / f"{stage}.json").read_text(encoding="utf-8"))
    return [o for o in costs["options"] if o["stage"] == stage], quality["first_stage"]["means"]["ndcg@10"]


def test_the_decision_figure_puts_each_option_at_its_numbers(tmp_path: Path) -> None:
    options, first = golden_costs("hybrid-71k")
    assert {o["live"]["fits"] for o in options} == {True, False}
    with canvas(14, 10, 110) as fig:
        axes = dict(zip(MACHINE_COLOURS, draw_decision(fig, "hybrid-71k", options, first), strict=True))
        drawn = {}
        for machine, ax in axes.items():
            for line in ax.lines:
                if line.get_marker() in (None, "None", ""):
                    continue
                for x, y in zip(*line.get_data(), strict=True):  # a point's line, or the minor tick marks
                    drawn[(machine, float(x), float(y))] = (line.get_marker(), line.get_markerfacecolor())
            ends = sorted(tuple(np.asarray(s).ravel()) for c in ax.collections for s in c.get_segments())
            mine = [o for o in options if o["machine"] == machine and o["latency"]["p95_ms"] is not None]
            want = sorted(
                (o["latency"]["p95_ms"], 100 * o["ndcg@10_interval"][0], o["latency"]["p95_ms"], 100 * hi)
                for o in mine
                for hi in [o["ndcg@10_interval"][1]]
            )
            assert len(ends) == len(want), machine
            np.testing.assert_allclose(np.reshape(ends, (-1, 4)), np.reshape(want, (-1, 4)), rtol=1e-12)
            labels = [t.get_text() for t in ax.texts if "€/1k" in t.get_text() or "missing" in t.get_text()]
            assert len(labels) == len(mine) and all(f"{o['model']}" in " ".join(labels) for o in mine)
            # tick labels as texts: x in the bottom row, y in the left column, each axis label beyond them
            spec = ax.get_subplotspec()
            assert spec is not None
            renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
            xs = {
                t.get_text(): t.get_window_extent(renderer)
                for t in ax.texts
                if t.get_va() == "top" and t.get_ha() == "center"
            }
            ys = {
                t.get_text(): t.get_window_extent(renderer)
                for t in ax.texts
                if t.get_va() == "center_baseline"
            }
            assert ({"500", "1,000", "2,000"} <= set(xs)) is spec.is_last_row() is (len(xs) > 3)
            assert bool(ys) is spec.is_first_col() and all(float(y) == int(y) for y in ys)
            if xs:
                assert ax.xaxis.label.get_window_extent(renderer).y1 < min(b.y0 for b in xs.values())
            if ys:
                assert ax.yaxis.label.get_window_extent(renderer).x1 < min(b.x0 for b in ys.values())
    for o in options:
        colour = MACHINE_COLOURS[o["machine"]]
        marker, face = drawn[(o["machine"], o["latency"]["p95_ms"], 100 * o["ndcg@10"])]
        assert marker == MARKERS[o["k"]]
        assert face == (colour if o["live"]["fits"] is True else "white")
    a = decision_figure("hybrid-71k", options, first, tmp_path / "a.png").read_bytes()
    assert a == decision_figure("hybrid-71k", options, first, tmp_path / "b.png").read_bytes()
    assert png_size(a) == (1540, 1100)  # tests/golden/report/figures.txt
    assert_bare_png(a)
    assert decision_figure("hybrid-71k", options[1:], first, tmp_path / "c.png").read_bytes() != a


def test_the_latency_figure_draws_the_medians_over_passes(tmp_path: Path) -> None:
    rows = [
        {"target": "m", "k": k, "pass": p, "p50_ms": p50, "p95_ms": p95}
        for k, p, p50, p95 in [
            (20, 1, 10.0, 20.0),
            (20, 2, 14.0, 30.0),
            (20, 3, 11.0, 21.0),
            (100, 1, 50.0, 90.0),
        ]
    ] + [{"target": "a", "k": 20, "pass": 1, "p50_ms": None, "p95_ms": None}]  # every call failed
    series = figure_series(rows)
    assert series == [Series("a", (), (), ()), Series("m", (20, 100), (11.0, 50.0), (21.0, 90.0))]
    with canvas(7.5, 4.2, 100) as fig:
        ax = draw_latency(fig, "gpu s1", series)
        lines = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in ax.lines}
    assert lines["m p50"] == ([20, 100], [11.0, 50.0]) and lines["m p95"] == ([20, 100], [21.0, 90.0])
    budgets = sorted(float(line.get_ydata()[0]) for line in ax.lines if line.get_label().startswith("_"))
    assert budgets == [LATENCY_BUDGET_LIVE_P95_MS, LATENCY_BUDGET_CHAT_P95_MS]
    a = latency_figure("gpu s1", series, tmp_path / "a.png").read_bytes()
    assert a == latency_figure("gpu s1", series, tmp_path / "b.png").read_bytes()
    assert (
        png_size(a) == (750, 420) and a != latency_figure("gpu s2", series, tmp_path / "c.png").read_bytes()
    )
    assert_bare_png(a)
