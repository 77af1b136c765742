"""Presentation mode in a hall (issues 21 and 34), in headless Chromium at 1366x768 and 1920x1080, in both languages.

Every page and every view, opened with present=1 (in one language, measured at 1366x768 and again after the window
grew to 1920x1080): the model's name on the page, the view's first chart whole on the first screen (no scrolling),
no chart (nor bertviz's frame) taller than the screen, every tick label of every chart, colour bars included, drawn
at least 18 px high (the presentation text size), every chart text dark. Without presentation mode, one view per page: ticks at
least 14 px. One server and one browser page for the whole module; every wait is for a condition.

The hall walk checks each view in one language (HALF: a page's views alternate between Chinese and English); the
complete sweep, every view in both languages for the three model shapes, is `python -m benchmarks.bench_hall`.
"""

from __future__ import annotations

import re

import pytest

from harness.charts import contrast_on_white
from harness.hall import MEASURE as HALL_MEASURE
from harness.hall import SETTLED as HALL_SETTLED
from tests.browser_helpers import ARTIFACTS, PROJECTOR, WAIT_S, Watch, _failure, wait_idle
from ui.shell.presentation import NORMAL_TEXT_PX, PRESENT_TEXT_PX

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
    from i18n import _, language_scope
    from viz.tokens import ROW_TITLES

    with language_scope("zh"):
        written = _(ROW_TITLES["written"])  # the rows of cross-attention: the tokens written (issue 34)
    assert title["text"] == written and title["mode"] == "vertical-rl" and title["transform"] == "none", title
    assert title["h"] > 3 * title["w"], title  # a column of upright characters


# Issue 34: a hall. One view per page (and RoPE's, whose charts sat below the screen), at a projector's 1366x768 and
# a 1920x1080 screen, in both languages, with present=1: the model's name and positions on the page with the sidebar
# folded, the first chart whole on the first screen, at 1920 the first chart (when not one of several side by side)
# at least 70% of the content's width and taller than at 1366 with the heatmap's cells still square, no label or
# option cut short, and every text of every chart at least 14 px and no lighter than the theme's text colour (text
# inside a bar, white on its colour, excepted).
HALL_VIEWS = [
    *VIEWS,
    ("positional", {"pe_view": "rope", "model": "demo:reverse_rope"}, 2),
    ("attribution", {}, 1),
    ("training", {"model": "demo:translate", "trn_play": "1"}, 2),  # the snapshots as one animation, its controls
    # the other shapes' and models' first screens: a model B of A's tokens, a decoder-only demo's views
    ("compare", {"model": "demo:fr_en"}, 1),
    ("compare", {"model": "demo:reverse_decoder_rope", "text": "stressed="}, 1),
    ("attribution", {"model": "demo:reverse_decoder_rope", "text": "stressed="}, 1),
    ("positional", {"pe_view": "length"}, 1),
    ("model", {"model": "demo:reverse_decoder_rope", "model_view": "weights"}, 1),
]
# In CI each view is walked in one language, at both screens: a page's views alternate between Chinese and English,
# its first in Chinese, so that every page is seen in Chinese (where its heading and chart titles are also checked
# for Chinese drawn with real glyphs, as test_e2e_chinese did page by page). The complete sweep, every view in both
# languages for the three model shapes, is the benchmark `python -m benchmarks.bench_hall` (harness/hall.py).


def _halves(views: list) -> dict[str, list]:
    """The views split between the two languages: each page's views alternate, its first in Chinese."""
    half, seen = {"zh": [], "en": []}, {}
    for view in views:
        n = seen[view[0]] = seen.get(view[0], -1) + 1
        half["en" if n % 2 else "zh"].append(view)
    return half


HALF = _halves(HALL_VIEWS)
CJK = re.compile(r"[\u4e00-\u9fff]")
CAPTION_CONTRAST = 4.5  # WCAG AA for text: captions carry the model's output ("model predicts: ...")
HALL_SCREENS = [PROJECTOR, {"width": 1920, "height": 1080}]
THEME_TEXT = (49, 51, 63)  # Streamlit's text colour #31333F: chart text may be as dark or darker, never lighter

_HALL = """() => {
    const _rightmost = f => Math.max(...Object.keys(f).filter(k => /^xaxis\\d*$/.test(k)).map(k => f[k].domain[1]));
    const main = document.querySelector('[data-testid="stMainBlockContainer"]');
    const style = getComputedStyle(main);
    const content = main.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const badge = document.getElementById('viz-model-badge');
    const b = badge && badge.getBoundingClientRect();
    const sidebar = document.querySelector('[data-testid="stSidebar"]');
    const plots = [...document.querySelectorAll('.js-plotly-plot')];
    const first = plots[0], r = first && first.getBoundingClientRect(), full = first && first._fullLayout;
    const square = full && full.xaxis && full.xaxis.scaleanchor === 'y'
        ? (full.xaxis._length / (full.xaxis.range[1] - full.xaxis.range[0]))
          / (full.yaxis._length / Math.abs(full.yaxis.range[1] - full.yaxis.range[0])) / (full.xaxis.scaleratio || 1)
        : null;
    // from the map's right edge to its colour bar's left edge, px (null: no colour bar beside a constrained map)
    const cbar = first && [...first.querySelectorAll('.colorbar .cbfill')].pop();  // the rightmost
    const gap = cbar && full.xaxis && full.xaxis.constrain === 'domain'
        ? cbar.getBoundingClientRect().left - (r.left + full._size.l + _rightmost(full) * full._size.w) : null;
    const texts = plots.flatMap(p => [...p.querySelectorAll('text')]
        .filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0
                     && !(t.getAttribute('class') || '').includes('bartext-inside'))
        .map(t => { const s = getComputedStyle(t); return {text: t.textContent.slice(0, 24), px: parseFloat(s.fontSize),
                                                           fill: s.fill}; }));
    return {content, badge: badge ? {text: badge.textContent, top: b.top, bottom: b.bottom, left: b.left,
                                     right: b.right, px: parseFloat(getComputedStyle(badge).fontSize)} : null,
            sidebar: sidebar ? sidebar.getBoundingClientRect().right > 1 : false,
            first: r ? {top: r.top, bottom: r.bottom, width: r.width, inColumns: !!first.closest('[data-testid="stColumn"]')}
                     : null,
            square, texts, gap,
            captions: [...document.querySelectorAll('[data-testid="stCaptionContainer"]')].map(c => {
                const s = getComputedStyle(c); return {text: c.textContent.slice(0, 30), color: s.color,
                                                       opacity: parseFloat(s.opacity)}; })};
}"""


_BAR_BESIDE = """() => {
    const _rightmost = f => Math.max(...Object.keys(f).filter(k => /^xaxis\\d*$/.test(k)).map(k => f[k].domain[1]));
    const p = document.querySelector('.js-plotly-plot'), f = p && p._fullLayout;
    const bar = p && [...p.querySelectorAll('.colorbar .cbfill')].pop();
    if (!bar || !f.xaxis || f.xaxis.constrain !== 'domain') return true;
    const right = p.getBoundingClientRect().left + f._size.l + _rightmost(f) * f._size.w;
    return bar.getBoundingClientRect().left - right <= 80; }"""


def _rgb(fill: str) -> tuple[int, ...]:
    return tuple(int(float(x)) for x in fill[fill.index("(") + 1 : fill.index(")")].split(",")[:3])


def _lighter_than_theme(fill: str) -> bool:
    luminance = lambda rgb: 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]  # noqa: E731
    return fill.startswith("rgb") and luminance(_rgb(fill)) > luminance(THEME_TEXT) + 0.5


def test_the_lighter_than_theme_check_tells_grey_from_dark():
    assert _lighter_than_theme("rgb(128, 132, 149)") and _lighter_than_theme("rgb(255, 255, 255)")
    assert not _lighter_than_theme("rgb(34, 34, 34)") and not _lighter_than_theme("rgb(49, 51, 63)")


def test_the_two_languages_walk_every_hall_view_once_and_chinese_every_page():
    assert sorted(map(repr, HALF["zh"] + HALF["en"])) == sorted(map(repr, HALL_VIEWS))
    assert {v[0] for v in HALF["zh"]} == {v[0] for v in HALL_VIEWS}
    assert abs(len(HALF["zh"]) - len(HALF["en"])) <= len({v[0] for v in HALL_VIEWS})  # about half each


def chinese_drawn(page, where: str) -> list[str]:
    """What is not Chinese drawn with real glyphs in a view opened with lang=zh: its heading, and each chart title
    that holds Chinese (in the charts' CJK font, every character with a glyph). Returns the problems."""
    from harness.view_checks import tofu

    out = []
    heading = page.locator('[data-testid="stMain"] h1').first.inner_text()
    if not CJK.search(heading):
        out.append(f"{where}: heading {heading!r}")
    for title in page.locator(".js-plotly-plot .gtitle").all():
        text = title.text_content() or ""
        if CJK.search(text):
            font = title.evaluate("e => getComputedStyle(e).fontFamily")
            if "WenQuanYi Micro Hei" not in font or tofu(page, text, f"20px {font}"):
                out.append(f"{where}: chart title {text!r} in {font} (a glyph missing?)")
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_hall_sees_the_model_whole_charts_and_large_dark_text(server, projector, lang):
    """The views of HALF[lang] (every view of HALL_VIEWS in one of the two languages; bench_hall sweeps them all in
    both, for every model shape)."""
    from i18n import _, language_scope
    from ui.views.positional_names import KINDS

    problems, texts, ticks, chinese_titles = [], 0, 0, set()
    for name, params, charts in HALF[lang]:  # each view opened once, at 1366x768, then the window made 1920x1080
        model = params.get("model", "demo:reverse")
        projector.page.set_viewport_size(HALL_SCREENS[0])
        open_view(projector, server.url(name, present="1", lang=lang, **{"model": model, **params}), charts)
        heights = []  # the first chart's, at each screen: taller on the larger one
        for screen in HALL_SCREENS:
            if screen is not HALL_SCREENS[0]:
                projector.page.set_viewport_size(screen)
            # every screen: measured once presentation mode's script has sized the boxes for it
            projector.page.wait_for_function(HALL_SETTLED, arg=screen["width"], timeout=WAIT_S * 1000)
            laid_out = projector.page.evaluate(_CHARTS)
            try:  # drawn with the page's first element (before the page's own script): there once the run is over
                projector.page.wait_for_selector("#viz-model-badge", timeout=WAIT_S * 1000)
            except Exception as e:
                raise AssertionError(f"no model badge; {_failure(projector, 'badge')}") from e
            try:  # the script draws the colour bar again beside a map laid out narrower than its box
                projector.page.wait_for_function(_BAR_BESIDE, timeout=10_000)
            except Exception:
                pass  # reported below with its distance
            shown = projector.page.evaluate(_HALL)
            where = f"{screen['width']}x{screen['height']} {lang} {name} {params}"
            if lang == "zh" and screen is HALL_SCREENS[0]:
                problems += chinese_drawn(projector.page, where)
                titles = projector.page.locator(".js-plotly-plot .gtitle").all_text_contents()
                chinese_titles |= {name} if any(CJK.search(t) for t in titles) else set()
            kind = "rope" if model.endswith("_rope") else "sinusoidal"
            with language_scope(lang):
                expected = (model.split(":", 1)[1], _(KINDS[kind]))
            badge = shown["badge"]
            if not badge or not all(part in badge["text"] for part in expected):
                problems.append(f"{where}: badge {badge} does not name {expected}")
            elif not (0 <= badge["top"] and badge["bottom"] <= screen["height"] and badge["right"] <= screen["width"]):
                problems.append(f"{where}: badge outside the screen {badge}")
            elif badge["px"] < 14:
                problems.append(f"{where}: badge text {badge['px']} px")
            if shown["sidebar"]:
                problems.append(f"{where}: the sidebar is open")
            first = shown["first"]
            cut = projector.page.evaluate(HALL_MEASURE)["cut"]  # a label or option drawn cut short (an ellipsis)
            problems += [f"{where}: label cut {text!r}" for text in cut]
            if first and not first["inColumns"]:
                heights.append(first["bottom"] - first["top"])
                if len(heights) == 2 and heights[1] <= heights[0]:
                    problems.append(f"{where}: first chart {heights[1]:.0f} px tall, as at 1366 ({heights[0]:.0f})")
            if charts and first is None:
                problems.append(f"{where}: no chart")
            if first:
                if not (first["top"] >= 0 and first["bottom"] <= screen["height"] + 1):  # sub-pixel rounding
                    problems.append(f"{where}: first chart spans {first['top']:.0f}-{first['bottom']:.0f} px")
                if screen["width"] == 1920 and not first["inColumns"] and first["width"] < 0.7 * shown["content"]:
                    problems.append(f"{where}: first chart {first['width']:.0f} px of {shown['content']:.0f}")
                if shown["gap"] is not None and shown["gap"] > 80:  # (a bar between two maps: negative)
                    problems.append(f"{where}: the colour bar {shown['gap']:.0f} px from its map")
                if shown["square"] is not None and abs(shown["square"] - 1) > 0.02:
                    problems.append(f"{where}: cells {shown['square']:.3f} times as wide as they should be")
            for c in shown["captions"]:  # the colour as drawn: blended with the white page by its opacity
                drawn = [round(255 - c["opacity"] * (255 - v)) for v in _rgb(c["color"])]
                if contrast_on_white("rgb({}, {}, {})".format(*drawn)) < CAPTION_CONTRAST:
                    problems.append(f"{where}: caption {c['text']!r} {c['color']} at opacity {c['opacity']}")
            for t in shown["texts"]:
                texts += 1
                white = t["fill"] == "rgb(255, 255, 255)"  # only drawn on a dark fill: a bar, a probable cell
                if t["px"] < 14 or (_lighter_than_theme(t["fill"]) and not white):
                    problems.append(f"{where}: chart text {t['text']!r} {t['px']} px {t['fill']}")
            assert len(laid_out["charts"]) >= charts, (where, laid_out)
            for chart in laid_out["charts"]:  # axes' and colour bars' tick labels: the presentation size
                ticks += chart["ticks"]
                if chart["height"] > screen["height"]:
                    problems.append(f"{where}: chart {chart['title']!r} is {chart['height']:.0f} px tall")
                small = sorted({px for px in chart["sizes"] if px < PRESENT_TEXT_PX})
                if small:
                    problems.append(f"{where}: chart {chart['title']!r} has ticks of {small} px")
            problems += [
                f"{where}: a frame {f['height']:.0f} px tall"
                for f in laid_out["frames"]
                if f["height"] > screen["height"]
            ]
            # what the hall sees (the window only), every view: test-artifacts/hall-*.png
            ARTIFACTS.mkdir(exist_ok=True)
            shot = f"hall-{lang}-{screen['width']}-{name}-{'-'.join(map(str, params.values())).replace(':', '_')}"
            projector.page.screenshot(path=str(ARTIFACTS / f"{shot}.png"))
    projector.page.set_viewport_size(PROJECTOR)
    kinds = sorted({re.sub(r"'[^']*'", "…", p) for p in problems})  # one line per view and kind of problem
    assert problems == [], f"{len(problems)} problems:\n" + "\n".join(kinds[:60])
    assert texts > 150 and ticks > 100  # the sizes and colours were read from drawn text
    if lang == "zh":  # every page that draws a chart drew one with a Chinese title
        assert chinese_titles >= {"attention", "inside", "positional", "decoding", "compare", "training"}, (
            chinese_titles
        )
    projector.assert_clean()
