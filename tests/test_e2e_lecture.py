"""Lecture-ready (issue 10), in headless Chromium: charts fit a projector's screen, every view is in the link.

- At 1366x768 (a projector) an input of 40 tokens gives a chart that starts below a compact header and ends
  inside the window, with dark tick labels of at least 14 px, no two overlapping and no single character rotated;
  the same at 1920x1080.
- On every page, a view made by clicking (views, kinds, layers, heads, positions, dimensions, offset, steps,
  candidates, queries, keys, sizes, lecture-pack inputs, presentation mode) is put in the URL; the URL opened in a
  fresh browser context shows the same view.
- The decoding page in presentation mode fits a projector's screen (its step charts side by side), and after
  Play the candidate box shows the last step's candidate with the probability the chart gives it.
- Interventions (issue 14) too: heads switched off with their buttons, or by a click on the head importance chart,
  are in the URL, and the link shows the same changed model.
"""

from __future__ import annotations

import re

import pytest

from model.checkpoints.demos import CHECKPOINTS
from tests.browser_helpers import (
    PROJECTOR,
    WAIT_S,
    Watch,
    chart_layout,
    choose,
    click_chart_point,
    contrast_on_white,
    escalating_timeouts,
    letters_checkpoint,
    pick_view,
    press_pill,
    screenshot,
    view_signature,
    wait_idle,
    wait_signature,
    wait_text,
    wait_ticks,
    wait_title,
    wait_url,
)
from tests.i18n_helpers import rendered

LETTERS = "abcdefghijklmnopqrst"
FORTY = (LETTERS * 2)[:39]  # 39 letters and </s>: 40 source tokens
CROSS = "Cross-attention (decoder → encoder)"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A random char-level model over a-t that reads up to 63 tokens: 4 heads, 2 encoder and 2 decoder layers."""
    card = {"task": "letters", "description": "random letters", "examples": ["abcdefgh"]}
    path = letters_checkpoint(tmp_path_factory.mktemp("lecture_model"), card, LETTERS, "letters64", max_len=64,
                              n_heads=4, n_decoder_layers=2)  # fmt: skip
    return f"path:{path}"


def fresh(browser, server, viewport=None) -> Watch:
    w = Watch(browser, server.origin)
    if viewport:
        w.page.set_viewport_size(viewport)
    return w


@pytest.mark.parametrize("viewport", [PROJECTOR, {"width": 1920, "height": 1080}], ids=["1366x768", "1920x1080"])
def test_a_forty_token_chart_fits_the_screen_with_readable_ticks(browser, server, model, viewport):
    views = (
        ("one", "cross", f"{CROSS}, layer 1, average of heads"),
        ("grid", "cross", f"{CROSS}, layer 1"),
        ("one", "encoder_self", "Encoder self-attention, layer 1, average of heads"),
    )
    # the larger screen: the one-head map (the grid's panels and the other kind are laid out by the same rules; the
    # hall test measures every view at 1920x1080 in presentation mode)
    for view, kind, title in views if viewport == PROJECTOR else views[:1]:
        watch = fresh(browser, server, viewport)
        try:
            watch.goto(server.url(model=model, text=FORTY, att_view=view, att_kind=kind))
            wait_title(watch, title)
            wait_idle(watch.page)
            facts = chart_layout(watch.page)
            where = f"{view}/{kind} at {viewport}: {facts}"
            assert facts["top"] <= 390, where  # a compact header: title and controls above the chart
            assert facts["bottom"] <= viewport["height"], where  # the chart and its axes inside the window
            assert facts["count"] >= 10 and min(facts["sizes"]) >= 14, where  # readable on a projector
            assert min(contrast_on_white(c) for c in facts["colors"]) >= 7, where  # dark (WCAG AAA)
            assert facts["overlaps"] == [], where  # thinned, never crowded, also between grid panels
            assert facts["rotated"] == [], where  # single characters stand upright
            assert watch.page.locator('[data-testid="stAppDeployButton"]').count() == 0  # no Deploy button
            assert watch.page.get_by_role("button", name="Deploy").count() == 0
            if viewport == PROJECTOR:
                screenshot(watch.page, f"lecture_{view}_{kind}_40_tokens")
            watch.assert_clean()
        finally:
            watch.close()


def round_trip(browser, server, maker: Watch, boxes: tuple[str, ...] = ()) -> dict:
    """The URL of the view `maker` shows, opened in a fresh browser context, shows the same view (and the same
    text in the text areas labelled `boxes`)."""
    wait_idle(maker.page)
    shown = view_signature(maker.page)
    typed = {label: maker.page.get_by_label(label, exact=True).input_value() for label in boxes}
    taker = fresh(browser, server, maker.page.viewport_size)
    try:
        taker.goto(maker.page.url)
        wait_signature(taker, shown)
        assert {label: taker.page.get_by_label(label, exact=True).input_value() for label in boxes} == typed
        taker.assert_clean()
    finally:
        taker.close()
    return shown


def test_attention_views_are_in_the_link(browser, server, model):
    maker = fresh(browser, server)
    page = maker.page
    try:
        maker.goto(server.url(model=model, text="abcdefgh"))
        wait_title(maker, f"{CROSS}, layer 1, average of heads")
        pick_view(page, "All heads of the layer")
        wait_url(maker, "att_view=grid")
        page.get_by_text("Encoder self", exact=True).click()
        wait_url(maker, "att_kind=encoder_self")
        choose(page, "Layer", "layer 0")
        wait_url(maker, "att_layer=0")
        wait_title(maker, "Encoder self-attention, layer 0")
        shown = round_trip(browser, server, maker)
        assert shown["segmented"] == [rendered("All heads of the layer")] and "Encoder self" in shown["radios"]

        pick_view(page, "One head")
        choose(page, "Head", "head 2")
        wait_url(maker, "att_view=one", "att_head=2")
        wait_title(maker, "Encoder self-attention, layer 0, head 2")
        round_trip(browser, server, maker)

        pick_view(page, "bertviz")
        page.get_by_text("model view", exact=True).click()
        wait_url(maker, "att_view=bertviz", "att_bertviz=model view")
        shown = round_trip(browser, server, maker)
        assert shown["iframes"] == 1 and "model view" in shown["radios"]

        page.get_by_text("Presentation mode", exact=True).click()
        wait_url(maker, "present=1")
        assert round_trip(browser, server, maker)["toggles"] == [True]
        maker.assert_clean()
    finally:
        maker.close()


def add_option(watch, label: str, option: str, *url_parts: str) -> None:
    """Add `option` to the multiselect `label` as a person does (open, click, Escape) until the URL holds it.

    Under heavy load a rerun that lands while the list is open can close it under the click; the condition (the
    URL) decides. While it does not hold, the person opens the list again and clicks the option if it is still
    offered (a chosen one leaves the list: then the change is on its way), with ever longer waits. Each try gives the
    list 30 s to show the option, and every other try types it and presses Enter instead: in two whole suites beside
    two burners, every click missed it (the page idle, the option never added)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = watch.page
    tries = escalating_timeouts(first_s=20.0)
    for i, timeout_s in enumerate(tries):
        wait_idle(page)
        box = page.get_by_role("combobox", name=label)
        box.click()
        if i % 2:  # every other try by the keyboard, as a person can too: the option typed, then Enter
            box.press_sequentially(option)
            page.keyboard.press("Enter")
        else:
            try:
                page.get_by_role("option", name=option, exact=True).click(
                    timeout=30_000
                )  # a starved browser: slow list
            except PlaywrightTimeout:
                pass  # not offered (any more): the URL below decides
        page.keyboard.press("Escape")  # close the list (while open, the rest of the page is hidden from roles)
        try:
            wait_url(watch, *url_parts, timeout_s=timeout_s)
            return
        except AssertionError:
            if i == len(tries) - 1:
                raise


def test_positional_views_are_in_the_link(browser, server, model):
    maker = fresh(browser, server)
    page = maker.page
    try:
        maker.goto(server.url("positional", model=model, text="abc"))
        wait_title(maker, "PE matrix: 100 positions × 16 dimensions, base 10000")
        pick_view(page, "Dot product vs offset")
        wait_url(maker, "pe_view=offsets")
        add_option(maker, "Starting positions p", "7", "pe_starts=0,10,25,7")
        wait_text(maker, "The curves coincide")
        offsets = round_trip(browser, server, maker)
        assert "7" in offsets["multiselects"][0].split()

        pick_view(page, "Sinusoids")
        add_option(maker, "Dimensions (2i: sin, 2i+1: cos)", "3", "pe_view=curves", "pe_dims=0,1,4,8,3")
        round_trip(browser, server, maker)

        pick_view(page, "Shift is a rotation")
        wait_title(maker, "M_k for k = 5 (first 16 dimensions)")
        page.get_by_role("slider", name="Offset k").focus()
        page.keyboard.press("ArrowRight")
        wait_url(maker, "pe_k=6")
        wait_title(maker, "M_k for k = 6 (first 16 dimensions)")
        round_trip(browser, server, maker)
        maker.assert_clean()
    finally:
        maker.close()


def test_decoding_and_model_views_are_in_the_link(browser, server, model):
    maker = fresh(browser, server)
    page = maker.page
    try:
        maker.goto(server.url("decoding", model=model, text="abcdefgh"))
        wait_text(maker, "Step 1 of")
        page.get_by_role("button", name="Next").click()
        wait_text(maker, "Step 2 of")
        choose(page, "Candidates shown", "3")
        choose(page, "Layer", "layer 0 (average of heads)")
        wait_url(maker, "dec_step=1", "dec_topk=3", "dec_layer=0")
        wait_title(maker, "Output tokens (rows) against source tokens (columns), layer 0", plot=3)
        shown = round_trip(browser, server, maker)
        assert any(m.startswith("Step 2 of") for m in shown["markdown"])

        maker.goto(server.url("model", model=model, text="abcdefgh"))
        wait_text(maker, "parameters")
        pick_view(page, "Weights")
        choose(page, "Part", "encoder")
        wait_url(maker, "model_view=weights", "model_part=encoder")
        wait_title(maker, rendered("Weight statistics per tensor"))
        round_trip(browser, server, maker)
        pick_view(page, "Shapes in attention")
        page.get_by_text("cross", exact=True).click()
        wait_url(maker, "model_view=shapes", "model_shape_kind=cross")
        wait_text(maker, "S = 9 source tokens")
        round_trip(browser, server, maker)
        maker.assert_clean()
    finally:
        maker.close()


def test_switched_off_heads_are_in_the_link(browser, server, model):
    maker = fresh(browser, server, PROJECTOR)
    page = maker.page
    try:
        maker.goto(server.url(model=model, text="abcdefgh"))
        wait_title(maker, f"{CROSS}, layer 1, average of heads")
        page.get_by_text(rendered("Switch heads off"), exact=True).click()
        press_pill(page, ".st-key-att_off_c1", "head 2")
        wait_url(maker, "att_off=c1.2")
        wait_text(maker, "With 1 head off the model writes")
        wait_ticks(maker, None, plot="Change in each output token")  # drawn (the title goes on with the total)
        screenshot(page, "lecture_heads_switched_off")
        page.get_by_text(rendered("Switch heads off"), exact=True).click()  # closed, as a fresh visitor finds it
        page.locator(".st-key-att_off_c1").wait_for(state="detached")
        shown = round_trip(browser, server, maker)
        assert any(m.startswith("With 1 head off") for m in shown["markdown"])

        page.get_by_text(rendered("Which heads matter for this input?"), exact=True).click()
        measure = page.get_by_role("button", name="Measure all 24 heads")
        measure.wait_for(state="visible")  # built by the run that opening the box started: clicked once it has ended
        wait_idle(page)  # (a click while that run still drew the rest of the page was lost on a busy machine)
        measure.click()
        wait_title(maker, rendered("Drop in the output's log-probability when one head is switched off"), plot=2)
        click_chart_point(maker, "Drop in the output", x=3, y=0, panel=3)  # cross-attention, layer 0, head 3
        wait_url(maker, "att_off=c0.3,c1.2")
        wait_text(maker, "With 2 heads off the model writes")
        screenshot(page, "lecture_head_importance")
        page.get_by_text(rendered("Which heads matter for this input?"), exact=True).click()
        page.locator(".js-plotly-plot").nth(2).wait_for(state="detached")  # the importance chart goes with it
        round_trip(browser, server, maker)
        maker.assert_clean()
    finally:
        maker.close()


def test_inside_attention_and_lecture_pack_views_are_in_the_link(browser, server, model):
    maker = fresh(browser, server)
    page = maker.page
    try:
        maker.goto(
            server.url("inside", model=model, text="abcdefgh", target="hgfe", in_layer="0", in_head="0", in_query="0")
        )  # the page's own default is its most spread-out row (default_focus)
        wait_title(maker, "Query and keys: Cross-attention (decoder → encoder), layer 0, head 0, query 0: <s> → h")
        page.get_by_text("Decoder self (causal)", exact=True).click()  # one row of controls, as on the attention page
        wait_url(maker, "in_kind=decoder_self")
        choose(page, "Layer", "layer 1")
        choose(page, "Head", "head 2")
        choose(page, "Query token", "2: g → f")  # row 2 reads "g" and writes "f" (issue 34)
        wait_url(maker, "in_layer=1", "in_head=2", "in_query=2")
        choose(page, "Key for the elementwise products", "1: h")
        page.get_by_text("Compare: without 1/√d_k", exact=True).click()
        wait_url(maker, "in_key=1", "in_noscale=1")
        length = page.get_by_label("Length T", exact=True)
        length.fill("256")
        length.press("Enter")
        wait_url(maker, "in_len=256")
        wait_title(maker, "Query and keys: Decoder self-attention (causal), layer 1, head 2, query 2: g → f")
        shown = round_trip(browser, server, maker)
        from model.analysis.inside import attention_cost
        from viz.inside_figs import format_count

        weights = format_count(attention_cost(32, 256, 768, 12).weight_elements)  # B, T, d_model, h: T from the link
        assert shown["toggles"][-1] is True and any(f"T × T = {weights} numbers" in m for m in shown["markdown"])

        label = "Inputs, one per line (at most 20, each at most 500 characters)"
        maker.goto(server.url("lecture_pack", model=model, text="abc"))
        box = page.get_by_label(label, exact=True)
        box.fill("bead\nface")
        box.press("Control+Enter")
        wait_url(maker, "pack_inputs=bead\nface")
        round_trip(browser, server, maker, boxes=(label,))
        maker.assert_clean()
    finally:
        maker.close()


def test_decoding_in_presentation_mode_fits_a_projector(browser, server, model):
    watch = fresh(browser, server, PROJECTOR)
    page = watch.page
    try:
        watch.goto(server.url("decoding", model=model, text="abcdefgh", present="1"))
        wait_title(watch, "Output tokens (rows) against source tokens (columns), layer 1", plot=3)
        wait_idle(page)
        top_k, cross, own = (chart_layout(page, i) for i in range(3))
        where = f"{top_k}, {cross}, {own}"
        assert top_k["right"] <= cross["left"] and cross["right"] <= own["left"], where  # side by side
        assert max(c["bottom"] for c in (top_k, cross, own)) <= PROJECTOR["height"], where  # one screen
        assert min(min(c["sizes"]) for c in (top_k, cross, own)) >= 18, where  # the presentation text size
        assert cross["overlaps"] == [] and own["overlaps"] == [] and cross["rotated"] == [], where
        # The choice under the candidates is reachable (since the strategy row and the heads switch joined the
        # page's top it sits below the fold in presentation mode: one scroll).
        button = page.get_by_role("button", name=rendered("Decode from this choice"))
        button.scroll_into_view_if_needed()
        box = button.bounding_box()
        assert button.is_visible() and 0 <= box["y"] and box["y"] + box["height"] <= PROJECTOR["height"], box
        screenshot(page, "lecture_decoding_presentation")
        watch.assert_clean()
    finally:
        watch.close()


CANDIDATE = "Continue with another candidate"
_STEP_SHOWN = """() => {
    const main = document.querySelector('[data-testid="stMain"]');
    const step = [...main.querySelectorAll('[data-testid="stMarkdownContainer"]')]
        .map(e => e.innerText).find(t => t.startsWith('Step ')) || '';
    const box = [...main.querySelectorAll('[data-testid="stSelectbox"]')].find(b => b.innerText.startsWith('CANDIDATE'));
    const bars = main.querySelector('.js-plotly-plot').data[0];
    const red = bars.marker.color.indexOf('#d62728');
    return {step, box: box ? box.querySelector('input').value : null, chosen: red < 0 ? null : bars.text[red]};
}""".replace("CANDIDATE", CANDIDATE)


@pytest.mark.skipif(not (CHECKPOINTS / "reverse").is_dir(), reason="the reverse demo is not shipped here")
def test_after_play_the_candidate_box_shows_the_last_step(browser, server):
    """Play runs to the last step; the box then offers that step's candidates, its choice with its probability."""
    watch = fresh(browser, server)
    page = watch.page
    try:
        watch.goto(server.url("decoding", model="demo:reverse", text="abcd"))
        wait_text(watch, "Step 1 of 5")
        wait_title(watch, "Top 5 next tokens")
        wait_idle(page)
        first = page.evaluate(_STEP_SHOWN)
        page.get_by_role("button", name="Play").click()
        wait_text(watch, "Step 5 of 5")
        page.get_by_role("button", name="Play").and_(page.locator("[disabled]")).wait_for(timeout=WAIT_S * 1000)
        wait_idle(page)
        last = page.evaluate(_STEP_SHOWN)
        token, p = re.search(r"writes (\S+) \(p = ([\d.]+%)\)", last["step"]).groups()
        assert last["box"] == f"{token}  ({p})" and last["chosen"] == p, last  # the step, the box, the chart agree
        assert token == "</s>" and last["box"] != first["box"], (first, last)  # it moved on from step 1's candidate
        watch.assert_clean()
    finally:
        watch.close()
