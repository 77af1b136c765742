"""The offline bertviz pages in a real headless Chromium, with every non-local request blocked.

Needs Debian's chromium (/usr/bin/chromium) and python playwright (see tests/browser_helpers.py).
Without them the tests skip, except under CI (the CI variable set), where they fail: CI installs chromium.
Screenshots land in test-artifacts/ (gitignored).
"""

from __future__ import annotations

import functools
import http.server
import threading

import numpy as np
import pytest

from tests.browser_helpers import ARTIFACTS, WAIT_S, chromium
from tests.test_bertviz_view import HOSTILE, attention
from ui.shell.presentation import PRESENT_TEXT_PX
from viz.bertviz_view import head_view_html, model_view_html

# Three encoder layers, two decoder layers (the head view pads the decoder's menu), three heads.
SRC = ["the", "cat", HOSTILE, "a & b", "</s>"]
TGT = ["<s>", "le", "chat", "<b>x</b>"]
L_ENC, L_DEC, H, S, T = 3, 2, 3, len(SRC), len(TGT)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A local http server on 127.0.0.1 serving a temporary folder: (folder, origin)."""
    folder = tmp_path_factory.mktemp("bertviz_pages")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


class Visit:
    """One page load under watch: requests seen, requests blocked, page errors, dialogs."""

    def __init__(self, browser, site, name: str, html: str):
        folder, origin = site
        (folder / name).write_text(html, encoding="utf-8")
        self.url = origin + name
        self.requests, self.aborted, self.errors, self.dialogs = [], [], [], []
        self.page = browser.new_page(viewport={"width": 1100, "height": 700})
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.route("**/*", self._route(origin))
        self.page.goto(self.url, wait_until="load", timeout=WAIT_S * 1000)

    def _route(self, origin: str):
        def route(r):
            if r.request.url.startswith(origin):
                r.continue_()
            else:
                self.aborted.append(r.request.url)
                r.abort()

        return route

    def wait_drawn(self, selector: str) -> None:
        """Wait for the view's first elements; on a timeout, say what went wrong on the page."""
        try:
            self.page.wait_for_selector(selector, state="attached", timeout=WAIT_S * 1000)
        except Exception as e:  # playwright's TimeoutError
            raise AssertionError(
                f"nothing drawn ({selector}); page errors {self.errors}, blocked {self.aborted}"
            ) from e

    def texts(self, selector: str) -> list[str]:
        return self.page.locator(selector).all_text_contents()

    def assert_clean(self):
        assert self.aborted == [], f"the page tried to go online: {self.aborted}"
        assert self.requests == [self.url], self.requests  # the page itself, nothing else
        assert self.errors == [] and self.dialogs == []


# [head, left token, right token, stroke-opacity] for each line of the head view
LINES_JS = """() => Array.from(document.querySelectorAll('#attention line')).map(l => [
    +l.parentNode.parentNode.getAttribute('head-index'), +l.getAttribute('left-token-index'),
    +l.getAttribute('right-token-index'), +l.getAttribute('stroke-opacity')])"""


def drawn_weights(page, shape) -> np.ndarray:
    """The head view's lines as an (H, left, right) array of stroke opacities."""
    out = np.full(shape, np.nan)
    for h, i, j, opacity in page.evaluate(LINES_JS):
        out[h, i, j] = opacity
    return out


def test_head_view_draws_offline(browser, site):
    enc, dec, crs = attention(L_ENC, L_DEC, H, S, T, seed=11, spread=2.0)
    v = Visit(browser, site, "head.html", head_view_html(enc, dec, crs, SRC, TGT))
    page = v.page
    v.wait_drawn("#attention line")
    assert v.texts("g#left text") == SRC and v.texts("g#right text") == SRC
    assert page.locator(".attentionBoxes rect").count() == 2 * H * S  # highlight boxes, both sides
    assert page.locator("#layer option").all_text_contents() == ["0", "1", "2"]
    # Each line's opacity is its rounded weight shared among the active heads, as stock bertviz draws it.
    np.testing.assert_allclose(drawn_weights(page, (H, S, S)), np.round(enc[0].astype(np.float64), 3) / H, atol=1e-12)

    page.locator("g#left text").nth(1).hover()  # lines from "cat" only
    visible = page.locator("#attention line[visibility='visible']")
    assert visible.count() == H * S
    assert set(
        page.evaluate(
            "() => [...document.querySelectorAll(\"#attention line[visibility='visible']\")]"
            ".map(l => l.getAttribute('left-token-index'))"
        )
    ) == {"1"}
    page.mouse.move(1000, 650)

    page.select_option("#filter", "2")  # cross: decoder tokens on the left, source on the right
    page.select_option("#layer", "1")
    assert v.texts("g#left text") == TGT and v.texts("g#right text") == SRC
    np.testing.assert_allclose(drawn_weights(page, (H, T, S)), np.round(crs[1].astype(np.float64), 3) / H, atol=1e-12)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "bertviz_head_view.png"), full_page=True)

    page.select_option("#filter", "1")
    page.select_option("#layer", "2")  # the decoder has no layer 2: drawn, without lines
    assert v.texts("g#left text") == TGT
    np.testing.assert_array_equal(drawn_weights(page, (H, T, T)), 0)
    v.assert_clean()
    page.close()


def test_model_view_draws_offline(browser, site):
    enc, dec, crs = attention(L_ENC, L_DEC, H, S, T, seed=12, spread=2.0)
    v = Visit(browser, site, "model.html", model_view_html(enc, dec, crs, SRC, TGT))
    page = v.page
    v.wait_drawn("svg line")
    labels = v.texts("svg text")
    assert labels == ["Heads", "0", "1", "2", "Layers", "0", "1", "2"]
    assert page.locator("svg line").count() == L_ENC * H * S * S
    assert page.locator(".attn_background").count() == L_ENC * H

    def open_detail(layer: int, head: int):
        box = page.locator(f"#attn_background_{layer}_{head}").bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)

    open_detail(1, 2)
    assert "Layer 1, Head 2" in v.texts("text.detail")
    assert v.texts("text.token") == SRC + SRC
    opacities = page.evaluate(
        "() => [...document.querySelectorAll('.attn-line-group line')].map(l => +l.getAttribute('stroke-opacity'))"
    )
    np.testing.assert_array_equal(np.reshape(opacities, (S, S)), np.round(enc[1, 2].astype(np.float64), 3))

    page.select_option("#filter", "2")
    assert page.locator("svg line").count() == L_DEC * H * T * S
    open_detail(0, 1)
    assert v.texts("text.token") == TGT + SRC
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "bertviz_model_view.png"), full_page=True)
    v.assert_clean()
    page.close()


def test_layer_and_heads_options_reach_the_views(browser, site):
    enc, dec, crs = attention(L_ENC, L_DEC, H, S, T, seed=13, spread=2.0)
    v = Visit(browser, site, "head_options.html", head_view_html(enc, dec, crs, SRC, TGT, layer=1, heads=[2]))
    v.wait_drawn("#attention line")
    assert v.page.input_value("#layer") == "1"
    expected = np.zeros((H, S, S))
    expected[2] = np.round(enc[1, 2].astype(np.float64), 3)  # head 2 alone, at full opacity
    np.testing.assert_allclose(drawn_weights(v.page, (H, S, S)), expected, atol=1e-12)
    v.assert_clean()
    v.page.close()

    v = Visit(browser, site, "model_options.html", model_view_html(enc, dec, crs, SRC, TGT, layer=1, heads=[0, 2]))
    v.wait_drawn("svg line")
    assert v.texts("svg text") == ["Heads", "0", "2", "Layers", "1"]
    assert v.page.locator("svg line").count() == 2 * S * S
    v.assert_clean()
    v.page.close()


@pytest.mark.parametrize("view", ["head", "model"])
def test_the_attention_menu_names_the_kind_that_is_drawn(browser, site, view):
    """Opened on cross-attention, the "Attention:" menu says Cross (stock bertviz kept saying Encoder)."""
    enc, dec, crs = attention(L_ENC, L_DEC, H, S, T, seed=5, spread=2.0)
    build = head_view_html if view == "head" else model_view_html
    v = Visit(browser, site, f"{view}_cross.html", build(enc, dec, crs, SRC, TGT, kind="Cross"))
    v.wait_drawn("svg line")
    assert v.page.eval_on_selector("#filter", "s => s.options[s.selectedIndex].text") == "Cross"
    if view == "head":
        assert v.texts("g#left text") == list(TGT) and v.texts("g#right text") == list(SRC)  # what is drawn is cross
    v.assert_clean()
    v.page.close()


@pytest.mark.parametrize("view", ["head", "model"])
def test_a_host_that_chooses_layer_and_kind_hides_bertvizs_menus(browser, site, view):
    """menus=False (the attention page, whose own menus are in its link): bertviz's Layer and Attention menus are
    out of sight, and the view still draws the layer and kind it was given."""
    enc, dec, crs = attention(L_ENC, L_DEC, H, S, T, seed=7, spread=2.0)
    build = head_view_html if view == "head" else model_view_html
    v = Visit(
        browser, site, f"{view}_no_menus.html", build(enc, dec, crs, SRC, TGT, kind="Cross", layer=1, menus=False)
    )
    v.wait_drawn("svg line")
    assert not v.page.locator("#filter").is_visible()
    assert v.page.eval_on_selector("#filter", "s => s.options[s.selectedIndex].text") == "Cross"
    if view == "head":
        assert not v.page.locator("#layer").is_visible() and v.page.input_value("#layer") == "1"
        assert v.texts("g#left text") == list(TGT) and v.texts("g#right text") == list(SRC)
    else:
        assert v.texts("svg text")[-2:] == ["Layers", "1"]
    v.assert_clean()
    v.page.close()


def test_the_watch_catches_a_page_that_goes_online(browser, site):
    """The same harness on the CDN page: the blocked require.js is recorded and nothing is drawn."""
    v = Visit(browser, site, "online.html", head_view_html(*attention(), SRC, TGT, offline=False))
    assert any("cdnjs.cloudflare.com" in u and "require" in u for u in v.aborted), v.aborted
    assert v.page.locator("svg").count() == 0
    assert any("require" in e for e in v.errors), v.errors
    v.page.close()


# A token's drawn height in CSS pixels of the host page: its font size times the body's zoom.
TOKEN_PX_JS = """() => { const t = document.querySelector('g#left text');
    return parseFloat(getComputedStyle(t).fontSize) * (parseFloat(document.body.style.zoom) || 1); }"""


@pytest.mark.parametrize("view", ["head", "model"])
def test_a_hall_gets_a_drawing_that_fills_its_frame(browser, site, view):
    """Presentation mode (fill=True): the drawing grows until it fills the frame's width or height, so a head view's
    tokens are drawn larger than bertviz's own size; without it nothing grows (a drawing that fits is left alone)."""
    enc, dec, crs = attention(L_ENC, L_DEC, H, S, T, seed=13, spread=2.0)
    build = head_view_html if view == "head" else functools.partial(model_view_html, layer=0)
    zooms = {}
    for fill in (False, True):
        v = Visit(browser, site, f"{view}-fill-{fill}.html", build(enc, dec, crs, SRC, TGT, menus=False, fill=fill))
        v.wait_drawn("#vis svg text")
        v.page.wait_for_function("() => document.fonts.status === 'loaded'")
        if fill:  # the zoom is set once the drawing is laid out
            v.page.wait_for_function("() => parseFloat(document.body.style.zoom) > 1")
        zooms[fill] = v.page.evaluate("() => parseFloat(document.body.style.zoom) || 1")
        fits = v.page.evaluate(  # nothing to scroll to
            """() => document.documentElement.scrollWidth <= window.innerWidth + 1
                     && document.documentElement.scrollHeight <= window.innerHeight + 1"""
        )
        assert fits, (view, fill)  # grown, still whole in its frame
        if view == "head" and fill:
            assert v.page.evaluate(TOKEN_PX_JS) >= PRESENT_TEXT_PX  # the hall's text size
        v.assert_clean()
        v.page.close()
    assert zooms[False] == 1 and zooms[True] > 1, zooms  # grown, and still whole (above)
