"""The page's plotly charts as the browser draws them: tick labels, titles, a trace's data, the layout of the labels, and
a click on a data point, each wait saying what the chart showed instead (and saving a screenshot) on a timeout."""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence

import numpy as np

from harness.browser import WAIT_S, Watch, _failure, wait_idle

# JavaScript: the n-th plotly chart on the page, or the first whose title starts with n (a string).
_FIND_PLOT = """const findPlot = n => {
    const plots = [...document.querySelectorAll('.js-plotly-plot')];
    if (typeof n === 'number') return plots[n] || null;
    return plots.find(p => (p.querySelector('.gtitle') || {}).textContent?.startsWith(n)) || null;
};"""


def ticks(page, axis: str, plot: int | str = 0) -> list[str] | None:
    """Tick label texts of one axis ('x' or 'y') of a chart (index or title prefix), as drawn in its SVG."""
    return page.evaluate(
        f"""([n, axis]) => {{ {_FIND_PLOT}
        const plot = findPlot(n);
        return plot ? [...plot.querySelectorAll('.' + axis + 'tick text')].map(t => t.textContent) : null;
    }}""",
        [plot, axis],
    )


def wait_ticks(
    watch: Watch,
    x: Sequence[str] | int | None,
    y: Sequence[str] | int | None = None,
    plot: int | str = 0,
    timeout_s: float = WAIT_S,
) -> None:
    """Wait until a chart shows exactly these x and y tick labels (a number: that many; None: any).

    On a timeout, say what it showed (and save a screenshot)."""
    page = watch.page
    try:
        page.wait_for_function(
            f"""([n, x, y]) => {{ {_FIND_PLOT}
                const plot = findPlot(n);
                if (!plot) return false;
                const texts = a => [...plot.querySelectorAll('.' + a + 'tick text')].map(t => t.textContent);
                const same = (a, b) => b === null || (typeof b === 'number' ? a.length === b
                                                      : a.length === b.length && a.every((v, i) => v === b[i]));
                return same(texts('x'), x) && same(texts('y'), y);
            }}""",
            arg=[plot, *(v if v is None or isinstance(v, int) else list(v) for v in (x, y))],
            timeout=timeout_s * 1000,
        )
    except Exception as e:  # playwright's TimeoutError
        raise AssertionError(
            f"chart {plot!r} never showed x ticks {x} / y ticks {y}: it shows x "
            f"{ticks(page, 'x', plot)}, y {ticks(page, 'y', plot)}; {_failure(watch, f'ticks {plot}')}"
        ) from e


def plot_title(page, plot: int = 0) -> str | None:
    return page.evaluate(
        f"n => {{ {_FIND_PLOT} const p = findPlot(n); "
        "return p ? (p.querySelector('.gtitle') || {}).textContent || '' : null; }",
        plot,
    )


def wait_title(watch: Watch, title: str, plot: int = 0, timeout_s: float = WAIT_S) -> None:
    """Wait until chart `plot` has exactly this title."""
    try:
        watch.page.wait_for_function(
            f"([n, t]) => {{ {_FIND_PLOT} const p = findPlot(n); "
            "return !!p && (p.querySelector('.gtitle') || {}).textContent === t; }",
            arg=[plot, title],
            timeout=timeout_s * 1000,
        )
    except Exception as e:
        raise AssertionError(
            f"chart {plot} never got the title {title!r}: it has {plot_title(watch.page, plot)!r}; "
            f"{_failure(watch, f'title {title}')}"
        ) from e


def plot_data(page, plot: int | str = 0, trace: int = 0, field: str = "z") -> np.ndarray:
    """A field of a trace of a chart (index or title prefix), as the browser holds it to draw, as an array.

    Plotly sends numpy arrays as {dtype, bdata (base64), shape}; plain lists come as they are.
    """
    value = page.evaluate(f"([n, t, f]) => {{ {_FIND_PLOT} return findPlot(n).data[t][f]; }}", [plot, trace, field])
    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        return array.reshape([int(n) for n in str(shape).split(",")]) if shape else array
    return np.asarray(value, dtype=float)


# JavaScript: layout facts of the n-th chart: its box, and its tick labels' size, colour, rotation and overlaps.
_CHART_LAYOUT = """n => {
    const plot = [...document.querySelectorAll('.js-plotly-plot')][n];
    if (!plot) return null;
    const box = plot.getBoundingClientRect();
    const labels = [...plot.querySelectorAll('.xtick text, .ytick text')];
    const rects = labels.map(t => t.getBoundingClientRect());
    const overlaps = [];
    for (let i = 0; i < rects.length; i++) for (let j = i + 1; j < rects.length; j++) {
        const a = rects[i], b = rects[j];
        if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1)
            overlaps.push([labels[i].textContent, labels[j].textContent]);
    }
    const rotated = [...plot.querySelectorAll('.xtick text')]
        .filter(t => /rotate\\((?!0[,)])/.test(t.getAttribute('transform') || '')).map(t => t.textContent);
    return {top: box.top, bottom: box.bottom, left: box.left, right: box.right, count: labels.length,
            sizes: labels.map(t => parseFloat(getComputedStyle(t).fontSize)),
            colors: labels.map(t => getComputedStyle(t).fill), overlaps, rotated};
}"""


def chart_layout(page, plot: int = 0) -> dict | None:
    """Layout facts of chart `plot` as drawn: top/bottom/left/right (px, viewport), tick label count, font sizes (px),
    fill colours, overlapping label pairs, and the x labels drawn rotated."""
    return page.evaluate(_CHART_LAYOUT, plot)


def contrast_on_white(css_color: str) -> float:
    """WCAG contrast ratio of an "rgb(r, g, b)" colour against white."""
    r, g, b = (int(v) for v in re.findall(r"\d+", css_color)[:3])

    def channel(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    luminance = 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)
    return 1.05 / (luminance + 0.05)


def click_chart_point(watch: Watch, plot: int | str, x: float, y: float, panel: int = 1) -> None:
    """Click a chart (index or title prefix) where subplot `panel` draws the data point (x, y), as a person would:
    the chart is scrolled into view and the mouse clicks that spot (plotly turns it into a selection)."""
    wait_idle(watch.page)
    spot = watch.page.evaluate(
        f"""([n, panel, x, y]) => {{ {_FIND_PLOT}
        const plot = findPlot(n);
        if (!plot || !plot._fullLayout) return null;
        plot.scrollIntoView({{block: 'center'}});
        const suffix = panel === 1 ? '' : String(panel);
        const xa = plot._fullLayout['xaxis' + suffix], ya = plot._fullLayout['yaxis' + suffix];
        const box = plot.getBoundingClientRect();
        return {{x: box.left + xa._offset + xa.l2p(x), y: box.top + ya._offset + ya.l2p(y)}};
    }}""",
        [plot, panel, x, y],
    )
    if spot is None:
        raise AssertionError(f"no chart {plot!r} to click; {_failure(watch, f'click {plot}')}")
    watch.page.mouse.click(spot["x"], spot["y"])
