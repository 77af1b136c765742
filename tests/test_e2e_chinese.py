"""The app in Chinese (issue 16), in headless Chromium at a projector's 1366x768, with the internet blocked.

Every page's views are opened in Chinese by the hall walk (tests/test_e2e_presentation.py, lang=zh: each page's
heading and chart titles Chinese, drawn with real glyphs in the charts' CJK font, a screenshot of each view). Here,
what the hall does not see: the app's chrome without presentation mode (the navigation and the sidebar in Chinese,
the navigation drawn with real glyphs), the head atlas page, and two heads switched off; a screenshot of each goes to
test-artifacts/zh-<name>.png. A browser whose language is Chinese gets Chinese without lang= in the link.
"""

from __future__ import annotations

import re

from i18n import _, language_scope
from tests.browser_helpers import (
    PROJECTOR,
    WAIT_S,
    Watch,
    screenshot,
    sidebar_nav_texts,
    tofu,
    wait_idle,
    wait_text,
)
from tests.i18n_helpers import msgid
from ui.shell.navigation import PAGES

CJK = re.compile(r"[\u4e00-\u9fff]")
CHARTS = {"attention"}  # of VISITS, the pages that draw a chart at once
# (screenshot, page, URL parameters): what the hall walk (every page's views, present=1) does not open
VISITS = [
    ("attention", "attention", {}),  # the chrome without presentation mode: navigation, sidebar
    ("head_atlas", "head_atlas", {}),
    ("attention-heads-off", "attention", {"text": "stressed", "att_off": "c1.0,c1.1"}),  # issue 14's views
]


def chinese(text: str) -> str:
    with language_scope("zh"):
        return _(text)


def test_the_chrome_and_the_views_the_hall_does_not_open_in_chinese_with_real_glyphs(browser, server):
    titles = [chinese(title) for _file, title, _icon in PAGES.values()]
    watch = Watch(browser, server.origin)
    try:
        watch.page.set_viewport_size(PROJECTOR)
        page = watch.page
        for shot, name, params in VISITS:
            watch.goto(server.url(name, lang="zh", **params))
            # This run drew the page (a title in Chinese), the sidebar to its last widget, and the first chart.
            page.locator('[data-testid="stMain"] h1', has_text=CJK).first.wait_for(timeout=WAIT_S * 1000)
            wait_text(watch, chinese("Presentation mode"))
            if name in CHARTS:
                page.locator(".js-plotly-plot .gtitle").first.wait_for(timeout=WAIT_S * 1000)
            wait_idle(page)
            assert sidebar_nav_texts(page) == titles, name
            heading = page.locator('[data-testid="stMain"] h1').first.inner_text()
            assert CJK.search(heading), f"{name}: {heading!r}"
            sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
            assert (
                chinese("Presentation mode") in sidebar
                and chinese("Input text ({reads})").format(reads=chinese("source")) in sidebar
            )
            if name in CHARTS:  # every chart title: Chinese, in the charts' CJK font stack, with real glyphs
                for chart_title in page.locator(".js-plotly-plot .gtitle").all():
                    text = chart_title.text_content()
                    assert CJK.search(text), f"{name}: chart title {text!r}"
                    font = chart_title.evaluate("e => getComputedStyle(e).fontFamily")
                    assert "WenQuanYi Micro Hei" in font, f"{name}: {text!r} in {font}"
                    assert tofu(page, text, f"20px {font}") == [], f"{name}: no glyph for some of {text!r}"
            nav_font = page.locator('[data-testid="stSidebarNav"] a').first.evaluate("e => getComputedStyle(e).font")
            assert tofu(page, "".join(titles), nav_font) == [], "navigation drawn as empty boxes"
            screenshot(page, f"zh-{shot}", max_height=2400)
        assert tofu(page, "\U0010fffc", "20px sans-serif") == ["\U0010fffc"]  # the check sees a missing glyph
        watch.assert_clean()
    finally:
        watch.close()


def test_a_chinese_browser_gets_chinese_without_asking(browser, server):
    context = browser.new_context(locale="zh-CN", viewport=PROJECTOR)
    try:
        context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(server.origin + "/") else r.abort())
        page = context.new_page()
        page.goto(server.url("model"), wait_until="load", timeout=WAIT_S * 1000)
        page.get_by_text(chinese(msgid("Model and input"))).first.wait_for(timeout=WAIT_S * 1000)
        wait_idle(page)
        assert sidebar_nav_texts(page)[0] == chinese("Attention")
        page.wait_for_function("() => location.search.includes('lang=zh')", timeout=WAIT_S * 1000)
        page.get_by_text("English", exact=True).click()  # the switch: back to English
        page.get_by_text(msgid("Model and input"), exact=True).first.wait_for(timeout=WAIT_S * 1000)
        wait_idle(page)
        assert sidebar_nav_texts(page)[0] == "Attention" and "lang=en" in page.url
    finally:
        context.close()
