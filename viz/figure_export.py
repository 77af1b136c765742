"""A figure as a file for a paper or a slide: SVG, PDF or PNG at a named size, rendered offline.

The renderer is kaleido (plotly's own) driving the system's Chromium, found on the PATH (or BROWSER_PATH): nothing is
downloaded, MathJax is off (it would come from a CDN), plotly.js is the one plotly ships. One Chromium per process,
started on the first export (about 3 s) and reused; exports are taken one at a time, each within RENDER_TIMEOUT_S.

SVG and PDF are vector files: heatmap cells are drawn as shapes (viz/vector_cells.py), text stays text (the tokens
can be searched and copied), and PDF embeds the fonts it uses (Chinese through a CJK font such as WenQuanYi Micro
Hei, named in viz/tokens.FONT_FAMILY). PNG is drawn at twice the preset's size, and at least MIN_PNG_PX wide.

A preset fixes the physical width (and a slide's height): the figure is laid out at most `layout_px` wide, its own
text sizes kept, and scaled by the preset's width over `layout_px`, so that every figure's text prints at one size (a
column's tick labels at about 7.5 pt) and a narrow figure is narrower than the column.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import re
import shutil
import threading
from dataclasses import dataclass

import plotly.graph_objects as go

from i18n import N_

from .vector_cells import vector_heatmaps

PX_PER_INCH = 96  # CSS pixels: Chromium's PDF page is width / 96 inches (a 672 px figure is 7 in)
MIN_PNG_PX = 1600  # a PNG is at least this wide (a slide or a print at ~450 dpi in a column)
DEFAULT_WIDTH = 960  # px: a figure that names no width is drawn about this wide on a page (plot and colour bar)
DEFAULT_HEIGHT = 450  # plotly's height for a figure that names none
FORMATS = {"svg": "image/svg+xml", "pdf": "application/pdf", "png": "image/png"}


@dataclass(frozen=True)
class Preset:
    title: str  # marked only: translate where shown
    width_in: float  # the printed width in inches
    layout_px: int  # the width the figure is laid out at (its text keeps its px size)
    aspect: float | None = None  # height / width, fixed (a slide); None: the figure's own, within max_aspect
    max_aspect: float = 1.3  # a tall figure (many heads) is no taller than this times its width

    @property
    def width_px(self) -> int:
        return int(round(self.width_in * PX_PER_INCH))


PRESETS = {
    "column": Preset(N_("Paper, one column (8.9 cm)"), 3.5, 480),
    "page": Preset(N_("Paper, full page width (17.8 cm)"), 7.0, 860, max_aspect=1.35),
    "slide": Preset(N_("Slide, 16:9"), 40 / 3, 1200, aspect=9 / 16),
}


class FigureExportError(RuntimeError):
    """The figure could not be written (no Chromium, an unknown format or preset, the renderer failed)."""


def format_of(filename: str) -> str:
    """'svg', 'pdf' or 'png' from a file name's suffix; FigureExportError for any other."""
    suffix = os.path.splitext(filename)[1].lower().lstrip(".")
    if suffix not in FORMATS:
        raise FigureExportError(f"unknown figure format {suffix!r}: use .svg, .pdf or .png")
    return suffix


def export_size(fig: go.Figure, preset: str) -> tuple[int, int]:
    """(width, height) in px the figure is laid out at for the preset. A slide: the preset's 16:9. Otherwise the
    figure's own size (a snug map keeps its colour bar beside it), shrunk to the preset's width where it is wider,
    and no taller than max_aspect times that width."""
    if preset not in PRESETS:
        raise FigureExportError(f"unknown preset {preset!r}: one of {', '.join(PRESETS)}")
    p = PRESETS[preset]
    if p.aspect is not None:
        return p.layout_px, int(round(p.layout_px * p.aspect))
    width, height = fig.layout.width or DEFAULT_WIDTH, fig.layout.height or DEFAULT_HEIGHT
    if width > p.layout_px:
        width, height = p.layout_px, height * p.layout_px / width
    return int(width), int(round(min(height, p.max_aspect * p.layout_px)))


def prepared(fig: go.Figure, fmt: str, preset: str = "page", vector: bool = True) -> tuple[go.Figure, dict]:
    """(the figure to render, kaleido's options) for a format and preset: vector cells for SVG and PDF (vector=False:
    plotly's own raster heatmaps), the size and the scale to the preset's physical width (PNG: twice that, at least
    MIN_PNG_PX wide). Pure: no rendering."""
    if fmt not in FORMATS:
        raise FigureExportError(f"unknown figure format {fmt!r}: use svg, pdf or png")
    width, height = export_size(fig, preset)
    scale = PRESETS[preset].width_px / PRESETS[preset].layout_px  # the same for every figure: text prints alike
    if fmt == "png":
        scale = max(2 * scale, MIN_PNG_PX / width)
    out = vector_heatmaps(fig) if vector and fmt in ("svg", "pdf") else go.Figure(fig)
    out.layout.width, out.layout.height = width, height
    out.layout.meta = None  # the page's sizing hints (presentation mode) mean nothing in a file
    return out, dict(format=fmt, width=width, height=height, scale=scale)


def chromium_path() -> str:
    """The Chromium (or Chrome) kaleido drives: BROWSER_PATH, else the first on the PATH. Never downloaded."""
    for candidate in (os.environ.get("BROWSER_PATH"), *map(shutil.which, ("chromium", "chromium-browser", "chrome"))):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise FigureExportError(
        "no Chromium found to draw the figure: install the system's chromium package (or set BROWSER_PATH)"
    )


RENDER_TIMEOUT_S = 120  # one figure (a start of Chromium included); past it the export fails with a message


class _Renderer:
    """One kaleido (one Chromium) on an event loop of its own thread, started on the first figure. A call waits at
    most RENDER_TIMEOUT_S: a browser that fails to start or hangs is an error, never a page that waits forever."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # one figure at a time (kaleido keeps one tab)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.kaleido = None

    def _call(self, coroutine):
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
            threading.Thread(target=self.loop.run_forever, name="figure-export", daemon=True).start()
            atexit.register(self.stop)
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(RENDER_TIMEOUT_S)

    async def _draw(self, fig: go.Figure, opts: dict) -> bytes:
        if self.kaleido is None:
            import kaleido  # the renderer: only where a figure is written

            # mathjax=False: no CDN; plotly.js: the one plotly.py ships (kaleido's default when plotly is installed)
            k = kaleido.Kaleido(mathjax=False, path=chromium_path(), timeout=RENDER_TIMEOUT_S)
            await k.open()
            self.kaleido = k
        return await self.kaleido.calc_fig(fig, opts=opts)

    def draw(self, fig: go.Figure, opts: dict) -> bytes:
        with self.lock:
            try:
                return self._call(self._draw(fig, opts))
            except FigureExportError:
                raise
            except Exception as err:  # the renderer's own errors (a browser that died, a timeout): one message
                self._close()
                raise FigureExportError(f"the figure could not be drawn ({type(err).__name__})") from err

    def _close(self) -> None:
        k, self.kaleido = self.kaleido, None
        if k is not None and self.loop is not None:
            try:
                self._call(k.close())
            except Exception:  # noqa: BLE001 - a browser already gone
                pass

    def stop(self) -> None:
        with self.lock:
            self._close()


_RENDERER = _Renderer()


_PATH_DATA = re.compile(rb' d="([^"]*)"')  # a path's outline (never text: a token "3.14159" stays as typed)
_LONG_DECIMALS = re.compile(rb"(\d\.\d\d)\d+")


def render(fig: go.Figure, fmt: str, preset: str = "page", vector: bool = True) -> bytes:
    """The figure as the bytes of an SVG, PDF or PNG file at a preset (see `prepared`; vector=False: heatmaps as
    plotly draws them, one raster picture each, the benchmark's baseline)."""
    out, opts = prepared(fig, fmt, preset, vector)
    data = _RENDERER.draw(out, opts)
    if fmt == "svg":  # coordinates to 1/100 px (plotly writes 182.51999999999998): a third smaller, the same drawing
        data = _PATH_DATA.sub(lambda m: b' d="' + _LONG_DECIMALS.sub(rb"\1", m.group(1)) + b'"', data)
    return data


def stop() -> None:
    """Close the shared Chromium (it is also closed when the process exits); the next figure starts another."""
    _RENDERER.stop()
