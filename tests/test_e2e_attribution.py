"""The attribution page (issue 26) in headless Chromium at 1366x768, presentation mode, in English and Chinese."""

from __future__ import annotations

import re

import pytest

from i18n import _, language_scope
from tests.browser_helpers import PROJECTOR, WAIT_S, Watch, screenshot, wait_idle
from ui.views.attribution_ui import DEFAULT_SHOWN


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_attribution_page_at_a_projector(browser, server, lang):
    with language_scope(lang):
        title = _("What explains output token {t} “{token}”?").format(t=1, token="c")
        heading = _("Which explanation agrees with what the model uses?")
    watch = Watch(browser, server.origin)
    try:
        page = watch.page
        page.set_viewport_size(PROJECTOR)
        watch.goto(server.url("attribution", model="demo:reverse", text="abcd", attr_tok="1", present="1", lang=lang))
        page.locator(".js-plotly-plot .gtitle", has_text=title).first.wait_for(timeout=WAIT_S * 1000)
        page.get_by_text(heading).first.wait_for(timeout=WAIT_S * 1000)
        wait_idle(page)
        screenshot(page, f"attribution-{lang}")
        box = page.locator(".js-plotly-plot").first.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PROJECTOR["width"], box
        panels = page.locator(".js-plotly-plot").first.locator(".annotation-text").all_text_contents()
        assert len(panels) == len(DEFAULT_SHOWN) + 1 and all(p.strip() for p in panels), panels  # methods, cross
        if lang == "zh":
            assert all(re.search(r"[\u4e00-\u9fff]", p) for p in panels), panels
        watch.assert_clean()
    finally:
        watch.close()
