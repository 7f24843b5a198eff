"""What every figure shares: matplotlib settings that no matplotlibrc can change, a fixed size and dpi, and a
PNG that holds no timestamp and no software name, so the same numbers give the same bytes.

:func:`canvas` opens a bare :class:`matplotlib.figure.Figure` on the Agg canvas (no pyplot: no figure
manager, nothing global to close) inside ``rc_context`` with matplotlib's own defaults plus :data:`RC`: the
user's matplotlibrc and style are reset for the drawing and restored after it. The text is DejaVu Sans as
matplotlib ships it (``mpl-data/fonts/ttf``: its font list puts the bundled fonts first, so a system copy of
DejaVu Sans never wins; :func:`font_file` names the file used). :func:`save_png` writes the PNG with zlib
level 1 (same pixels, a quarter of level 6's time) and without matplotlib's ``Software`` text; the report adds
its ``analysis_code`` chunk afterwards (``analysis.reporting.codeinfo.stamp_tree``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FONT", "RC", "canvas", "font_file", "save_png"]

FONT: Final = "DejaVu Sans"
# on top of matplotlib's defaults (rcdefaults), whatever the user's matplotlibrc says
RC: Final[dict[str, Any]] = {
    "font.family": [FONT],
    "font.size": 10.0,
    "mathtext.fontset": "dejavusans",
    "text.usetex": False,
    "text.hinting": "default",
    "text.antialiased": True,
    "lines.antialiased": True,
    "axes.unicode_minus": True,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "savefig.edgecolor": "white",
    "savefig.transparent": False,
    "savefig.dpi": "figure",
    "savefig.bbox": None,
    "savefig.format": "png",
    "path.simplify": True,
    "agg.path.chunksize": 0,
}
PNG_COMPRESSION: Final = 1
# per thread: the key (width and height in pixels, dpi) and the Agg renderer of the last canvas drawn
_SHARED = threading.local()


@contextmanager
def canvas(width_in: float, height_in: float, dpi: int) -> Iterator[Figure]:
    """A Figure of ``width_in`` x ``height_in`` inches at ``dpi`` under the fixed settings; draw and save it
    inside the ``with`` block (the settings apply to both)."""
    # lazy: matplotlib is heavy (about 0.5 s to import); only a report that draws figures loads it
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context():
        matplotlib.rcdefaults()  # matplotlib's own defaults, not the user's matplotlibrc
        cast(Any, matplotlib.rcParams).update(RC)  # the typed keys of rcParams: RC is a plain dict
        fig = Figure(figsize=(width_in, height_in), dpi=dpi)
        _share_renderer(FigureCanvasAgg(fig))
        yield fig


def _share_renderer(canvas: Any) -> None:
    """Give ``canvas`` (a FigureCanvasAgg) the renderer of this thread's previous canvas of the same size and
    dpi, so that one report's figures of a size share one. A renderer keeps matplotlib's cache of text
    metrics (and of parsed mathtext): the same legend entries, axis labels and tick labels are measured once
    per size instead of once per figure (the four decision figures of a study, its latency figures, its
    stage figures of as many rows). Drawing clears the renderer's pixels first (``FigureCanvasAgg.draw``),
    so the PNGs are byte for byte those of a fresh renderer; one renderer is kept per thread."""
    key = (*canvas.get_width_height(physical=True), canvas.figure.dpi)  # FigureCanvasAgg.get_renderer's
    if getattr(_SHARED, "key", None) != key:
        _SHARED.key, _SHARED.renderer = key, canvas.get_renderer()
    canvas.renderer = _SHARED.renderer
    canvas._lastKey = key  # get_renderer reuses canvas.renderer while the key is this one


def save_png(fig: Figure, path: Path) -> Path:
    """Write ``fig`` as a PNG at its size and dpi: no ``Software`` text, no time (PNG carries none unless
    given), zlib level 1."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(
        path, format="png", metadata={"Software": None}, pil_kwargs={"compress_level": PNG_COMPRESSION}
    )
    return path


def font_file() -> Path:
    """The file matplotlib renders :data:`FONT` from under the fixed settings (the bundled one)."""
    # lazy: matplotlib is heavy; only the tests and a drawing report ask
    from matplotlib import font_manager

    return Path(font_manager.findfont(font_manager.FontProperties(family=FONT), fallback_to_default=False))
