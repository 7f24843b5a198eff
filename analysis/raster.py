"""A small raster canvas for the report's stage figures: Pillow only, no matplotlib.

matplotlib's import and its artists (every text laid out, measured and drawn as an object) were most of a
cold full-size ``analysis report``: about 1.8 s of CPU for four figures of a few dozen marks and labels. This
module draws the same kind of figure directly: lines, markers and rectangles on a canvas of ``SCALE`` times
the output size, reduced by averaging each ``SCALE`` x ``SCALE`` block (anti-aliased edges), then the text
at the output size with FreeType (DejaVu Sans, the font matplotlib ships, found without importing
matplotlib). Sizes are given in points at 100 dots per inch, as in matplotlib, so a figure keeps the pixel
size it had.

Deterministic: the same inputs give the same bytes (no timestamp or software name in the PNG, Pillow's basic
text layout rather than raqm, whose presence depends on the system).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

__all__ = ["DPI", "SCALE", "Canvas", "Panel", "font_path", "nice_ticks", "pt"]

DPI = 100
SCALE = 3  # shapes are drawn at 3x and reduced: anti-aliased lines and markers
_FONT = "DejaVuSans.ttf"


def pt(points: float) -> float:
    """Points to output pixels at ``DPI``."""
    return points * DPI / 72.0


@lru_cache(maxsize=1)
def font_path() -> Path:
    """DejaVu Sans as matplotlib ships it (``mpl-data/fonts/ttf``), located without importing matplotlib."""
    spec = importlib.util.find_spec("matplotlib")
    origin = spec.origin if spec is not None else None
    if origin is None:
        raise RuntimeError(
            "the figures' font comes with matplotlib, which is not installed: run `uv sync --locked`"
        )
    path = Path(origin).parent / "mpl-data" / "fonts" / "ttf" / _FONT
    if not path.is_file():
        raise RuntimeError(
            f"{path}: the figures' font is missing from matplotlib's package data; "
            "reinstall it with `uv sync --locked --reinstall-package matplotlib`"
        )
    return path


@lru_cache(maxsize=16)
def _font(size_pt: float) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(
        str(font_path()), size=max(1, round(pt(size_pt))), layout_engine=ImageFont.Layout.BASIC
    )


def nice_ticks(low: float, high: float, most: int = 7) -> tuple[list[float], int]:
    """Tick values in ``[low, high]`` with a step of 1, 2, 2.5 or 5 times a power of ten (at most ``most``
    ticks), and the number of decimals their labels need."""
    span = high - low
    if not (math.isfinite(span) and span > 0):
        return [low], 0
    magnitude = 10.0 ** math.floor(math.log10(span / most))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        step = factor * magnitude
        if span / step <= most:
            break
    first = math.ceil(low / step - 1e-9)
    ticks = [(first + i) * step for i in range(math.floor(high / step + 1e-9) - first + 1)]
    decimals = max(0, -math.floor(math.log10(step) + 1e-9) + (1 if factor == 2.5 else 0))
    return ticks, decimals


def tick_label(value: float, decimals: int) -> str:
    text = f"{abs(value):.{decimals}f}"
    return ("\u2212" + text) if value < 0 and float(text) != 0 else text  # a minus sign, as matplotlib writes


@dataclass
class Panel:
    """An axes box in output pixels (``left``, ``top``, ``right``, ``bottom``) with a data range: x from
    ``xmin`` to ``xmax``, y from ``ymin`` (bottom) to ``ymax`` (top)."""

    left: float
    top: float
    right: float
    bottom: float
    xmin: float = 0.0
    xmax: float = 1.0
    ymin: float = 0.0
    ymax: float = 1.0

    def x(self, value: float) -> float:
        return self.left + (value - self.xmin) / (self.xmax - self.xmin) * (self.right - self.left)

    def y(self, value: float) -> float:
        return self.bottom - (value - self.ymin) / (self.ymax - self.ymin) * (self.bottom - self.top)


@dataclass
class Canvas:
    """Shapes at ``SCALE`` times ``width`` x ``height``; texts kept and drawn after the reduction."""

    width: int
    height: int
    image: Image.Image = field(init=False)
    draw: ImageDraw.ImageDraw = field(init=False)
    texts: list[tuple[float, float, str, float, str, str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.image = Image.new("RGB", (self.width * SCALE, self.height * SCALE), "white")
        self.draw = ImageDraw.Draw(self.image)

    def line(
        self,
        points: Sequence[tuple[float, float]],
        colour: str,
        width_pt: float,
        dash: tuple[float, float] | None = None,
    ) -> None:
        """A polyline in output pixels; ``dash`` (on, off) in points for a dashed straight segment."""
        w = max(1, round(pt(width_pt) * SCALE))
        if dash is None or len(points) != 2:
            self.draw.line([(x * SCALE, y * SCALE) for x, y in points], fill=colour, width=w)
            return
        (x0, y0), (x1, y1) = points
        length = math.hypot(x1 - x0, y1 - y0)
        on, off = pt(dash[0]), pt(dash[1])
        start = 0.0
        while start < length:
            end = min(start + on, length)
            a, b = start / length, end / length
            segment = [
                ((x0 + a * (x1 - x0)) * SCALE, (y0 + a * (y1 - y0)) * SCALE),
                ((x0 + b * (x1 - x0)) * SCALE, (y0 + b * (y1 - y0)) * SCALE),
            ]
            self.draw.line(segment, fill=colour, width=w)
            start = end + off

    def rectangle(self, panel: Panel, colour: str = "black", width_pt: float = 0.8) -> None:
        w = max(1, round(pt(width_pt) * SCALE))
        box = [panel.left * SCALE, panel.top * SCALE, panel.right * SCALE, panel.bottom * SCALE]
        self.draw.rectangle(box, outline=colour, width=w)

    def marker(self, x: float, y: float, kind: str, size_pt: float, colour: str, face: str) -> None:
        """A matplotlib-style marker ("o", "^", "v", "x") of ``size_pt`` points, filled with ``face``."""
        r = pt(size_pt) / 2 * SCALE
        cx, cy = x * SCALE, y * SCALE
        edge = max(1, round(pt(1.0) * SCALE))
        if kind == "o":
            self.draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=face, outline=colour, width=edge)
        elif kind in ("^", "v"):
            s = 1 if kind == "^" else -1
            self.draw.polygon(
                [(cx, cy - s * r), (cx - r, cy + s * r), (cx + r, cy + s * r)],
                fill=face,
                outline=colour,
                width=edge,
            )
        else:
            for dx in (-r, r):
                self.draw.line([(cx - r, cy - dx), (cx + r, cy + dx)], fill=colour, width=edge)

    def text(
        self,
        x: float,
        y: float,
        text: str,
        size_pt: float,
        ha: str = "center",
        va: str = "center",
        colour: str = "black",
    ) -> None:
        """Text at output pixel ``(x, y)``; ``ha``: left, center, right; ``va``: top, center, bottom."""
        self.texts.append((x, y, text, size_pt, ha, va, colour))

    def text_width(self, text: str, size_pt: float) -> float:
        return float(_font(size_pt).getlength(text))

    def save(self, path: Path) -> None:
        """Reduce, draw the texts and write a PNG without metadata (zlib level 1: same pixels, faster)."""
        out = self.image.reduce(SCALE)  # box filter over SCALE x SCALE pixels: each output pixel's coverage
        draw = ImageDraw.Draw(out)
        anchors = {"left": "l", "center": "m", "right": "r"}, {"top": "a", "center": "m", "bottom": "d"}
        for x, y, text, size, ha, va, colour in self.texts:
            for i, line in enumerate(text.split("\n")):
                dy = i * pt(size) * 1.2
                draw.text(
                    (x, y + dy), line, fill=colour, font=_font(size), anchor=anchors[0][ha] + anchors[1][va]
                )
        path.parent.mkdir(parents=True, exist_ok=True)
        out.save(path, format="PNG", compress_level=1)
