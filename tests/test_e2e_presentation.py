"""Presentation mode on a projector (issue 21), in headless Chromium at 1366x768.

Every page and every view, opened with present=1: the view's first chart is whole on the first screen (no scrolling),
no chart (nor bertviz's frame) is taller than the screen, and every tick label of every chart, colour bars included,
is drawn at least 18 px high (the presentation text size). Without presentation mode, one view per page: ticks at
least 14 px. One server and one browser page for the whole module; every wait is for a condition.
"""

from __future__ import annotations

import pytest

from tests.browser_helpers import PROJECTOR, WAIT_S, Watch, _failure, screenshot, wait_idle
from ui.presentation import NORMAL_TEXT_PX, PRESENT_TEXT_PX

# (page, URL parameters, charts the view draws with the default demo). A view that draws no chart is opened too:
# bertviz's frame and the tables must keep within the screen as well.
VIEWS = [
    ("attention", {"att_view": "one"}, 1),
    ("attention", {"att_view": "grid"}, 1),
    ("attention", {"att_view": "overview"}, 1),
    ("attention", {"att_view": "bertviz"}, 0),
    ("attention", {"att_view": "bertviz", "att_bertviz": "model view"}, 0),
    ("inside", {}, 10),
    ("positional", {"pe_view": "matrix"}, 1),
    ("positional", {"pe_view": "curves"}, 1),
    ("positional", {"pe_view": "offsets"}, 1),
    ("positional", {"pe_view": "similarity"}, 1),
    ("positional", {"pe_view": "shift"}, 1),
    ("positional", {"pe_view": "mine"}, 2),
    ("positional", {"pe_view": "infer", "pe_pos": "off"}, 2),
    ("positional", {"pe_view": "models"}, 2),  # a chart a row of maps, one colour bar each
    ("decoding", {"dec_strategy": "greedy"}, 4),
    ("decoding", {"dec_strategy": "beam"}, 2),
    ("decoding", {"dec_strategy": "sample"}, 5),
    ("compare", {}, 1),
    ("training", {"model": "demo:translate"}, 2),  # the translate demo ships training snapshots
    ("model", {"model_view": "config"}, 0),
    ("model", {"model_view": "params"}, 1),
    ("model", {"model_view": "weights"}, 1),
    ("model", {"model_view": "shapes"}, 0),
    ("lecture_pack", {}, 0),
]

# JavaScript: every chart of the page (plotly's, in page order) and every frame: its box, and the font size of each
# tick label it draws (axes and colour bars).
_CHARTS = """() => {
    const box = e => { const r = e.getBoundingClientRect();
                       return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, height: r.height}; };
    const charts = [...document.querySelectorAll('.js-plotly-plot')].map(p => {
        const ticks = [...p.querySelectorAll('.xtick text, .ytick text, .colorbar g[class$="tick"] text')];
        return {...box(p), title: (p.querySelector('.gtitle') || {}).textContent || '',
                sizes: ticks.map(t => parseFloat(getComputedStyle(t).fontSize)), ticks: ticks.length};
    });
    const frames = [...document.querySelectorAll('[data-testid="stIFrame"], iframe')].map(box);
    return {charts, frames};
}"""

# JavaScript: the view is drawn: at least n charts, each with its SVG and (when it has axes) its tick labels.
_DRAWN = """n => {
    const plots = [...document.querySelectorAll('.js-plotly-plot')];
    return plots.length >= n && plots.every(p => p.querySelector('.main-svg') && p._fullLayout);
}"""


@pytest.fixture(scope="module")
def projector(browser, server):
    watch = Watch(browser, server.origin)
    watch.page.set_viewport_size(PROJECTOR)
    yield watch
    watch.close()


def open_view(watch: Watch, url: str, charts: int) -> dict:
    """Open a view and wait until it is drawn; return its charts and frames as laid out."""
    watch.goto(url)
    page = watch.page
    page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=WAIT_S * 1000)
    wait_idle(page)
    try:
        page.wait_for_function(_DRAWN, arg=charts, timeout=WAIT_S * 1000)
        if "bertviz" in url:
            page.locator('[data-testid="stIFrame"], iframe').first.wait_for(timeout=WAIT_S * 1000)
    except Exception as e:
        raise AssertionError(f"{url} never drew {charts} charts; {_failure(watch, 'presentation')}") from e
    wait_idle(page)
    return page.evaluate(_CHARTS)


def test_every_view_fits_a_projector_in_presentation_mode(server, projector):
    screen_w, screen_h = PROJECTOR["width"], PROJECTOR["height"]
    problems, ticks = [], 0
    for name, params, charts in VIEWS:
        url = server.url(name, present="1", **params)
        shown = open_view(projector, url, charts)
        where = f"{name} {params}"
        assert len(shown["charts"]) >= charts, (where, shown)
        if shown["charts"]:
            first = shown["charts"][0]
            if not (first["top"] >= 0 and first["bottom"] <= screen_h and first["right"] <= screen_w):
                problems.append(
                    f"{where}: first chart {first['title']!r} spans {first['top']:.0f}-{first['bottom']:.0f} px"
                )
        for chart in shown["charts"]:
            ticks += chart["ticks"]
            if chart["height"] > screen_h:
                problems.append(f"{where}: chart {chart['title']!r} is {chart['height']:.0f} px tall")
            small = [s for s in chart["sizes"] if s < PRESENT_TEXT_PX]
            if small:
                problems.append(f"{where}: chart {chart['title']!r} has ticks of {sorted(set(small))} px")
        problems += [f"{where}: a frame {f['height']:.0f} px tall" for f in shown["frames"] if f["height"] > screen_h]
        if problems and problems[-1].startswith(where):
            screenshot(projector.page, f"presentation-{name}-{'-'.join(map(str, params.values()))}")
    assert problems == [], "\n".join(problems)
    assert ticks > 100  # the font sizes were read from drawn tick labels
    projector.assert_clean()


def test_ticks_are_at_least_14_px_without_presentation_mode(server, projector):
    seen = set()
    for name, params, charts in VIEWS:
        if name in seen or charts == 0:
            continue
        seen.add(name)
        shown = open_view(projector, server.url(name, **params), charts)
        sizes = [s for chart in shown["charts"] for s in chart["sizes"]]
        assert sizes and min(sizes) >= NORMAL_TEXT_PX, (name, params, sorted(set(sizes)))
    assert seen == {"attention", "inside", "positional", "decoding", "compare", "training", "model"}


def test_the_bertviz_model_view_fits_its_frame_beside_the_sidebar(server, projector):
    """Issue 21: bertviz's model view draws fixed-size thumbnails; at 1366 px beside the sidebar its last head
    column was cut off. Once drawn, the page is zoomed to its frame's width."""
    page = projector.page
    open_view(projector, server.url("attention", att_view="bertviz", att_bertviz="model view"), 0)
    frame = page.locator('[data-testid="stIFrame"], iframe').first.element_handle().content_frame()
    frame.wait_for_selector("#vis svg", timeout=WAIT_S * 1000)
    frame.wait_for_function(
        "() => document.documentElement.scrollWidth <= window.innerWidth + 1", timeout=WAIT_S * 1000
    )
    zoom = frame.evaluate("() => parseFloat(document.body.style.zoom || '1')")
    assert zoom < 1  # it did not fit unzoomed (4 heads need about 980 px; the frame has about 900)


def test_chinese_y_axis_titles_stand_upright(server, projector):
    """Issue 21: plotly turns y-axis titles a quarter round, Chinese characters lying on their sides; in Chinese they
    are written top to bottom, each character upright (the title taller than wide, not rotated)."""
    shown = open_view(projector, server.url("attention", lang="zh", present="1", att_view="one"), 1)
    assert shown["charts"]
    title = projector.page.evaluate(
        """() => { const t = document.querySelector('.js-plotly-plot .ytitle');
                   const r = t.getBoundingClientRect(), s = getComputedStyle(t);
                   return {text: t.textContent, mode: s.writingMode, transform: s.transform, w: r.width, h: r.height}; }"""
    )
    assert "解码器" in title["text"] and title["mode"] == "vertical-rl" and title["transform"] == "none", title
    assert title["h"] > 3 * title["w"], title  # a column of upright characters
