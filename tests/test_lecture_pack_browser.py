"""The lecture pack in a real headless Chromium, opened from file:// with every other request blocked.

Needs Debian's chromium and python playwright (see tests/browser_helpers.py); skips without them
(fails under CI). Proves the file needs no server and no network: every chart is drawn, the layer / head
selectors and the decoding step slider work, and nothing but the file itself is requested.
"""

from __future__ import annotations

import numpy as np
import pytest

from pack.page import lecture_pack_html
from tests.browser_helpers import VIEWPORT, chromium
from tests.i18n_helpers import rendered
from tests.test_lecture_pack import H, fake_records
from viz.tokens import display_token


@pytest.fixture(scope="module")
def opened(tmp_path_factory):
    """(page, records, requests, blocked, errors) with the pack drawn."""
    records = fake_records(2)
    path = tmp_path_factory.mktemp("pack") / "pack.html"
    path.write_text(lecture_pack_html(records), encoding="utf-8")
    url = path.as_uri()
    requests, blocked, errors = [], [], []
    with chromium() as browser:
        context = browser.new_context(viewport=VIEWPORT)

        def route(r):
            if r.request.url == url:
                r.continue_()
            else:
                blocked.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(url, wait_until="load", timeout=60_000)
        try:
            page.wait_for_function("document.body.dataset.drawn !== undefined", timeout=120_000)
        except Exception as e:  # playwright's TimeoutError
            raise AssertionError(f"the pack never finished drawing; errors {errors}, blocked {blocked}") from e
        yield page, records, requests, blocked, errors
        context.close()


def test_every_chart_is_drawn_offline(opened):
    page, records, requests, blocked, errors = opened
    # model-wide PE: 3 charts; each input: 3 kinds x (chosen map + every layer/head), 3 PE, 3 decoding
    expected = 3 + 12 * len(records.inputs)
    assert page.evaluate("document.body.dataset.drawn") == str(expected), errors
    drawn = page.evaluate(
        "[...document.querySelectorAll('.js-plotly-plot')].filter(p => p.querySelector('.main-svg')).length"
    )
    assert drawn == expected
    # every layer and head of every kind: one trace of tiles, layer l and head h at rows l(q+1).., columns h(k+1)..
    tiled = page.evaluate(
        "[...document.querySelectorAll('.attention .overview')].map(p => [p.data.length, p.data[0].z])"
    )
    kinds = [(r.capture, kind) for r in records.inputs for kind in ("encoder_self", "decoder_self", "cross")]
    assert [n for n, _ in tiled] == [1] * len(kinds)
    for (cap, kind), (_, z) in zip(kinds, tiled, strict=True):
        maps = getattr(cap, kind)
        L, H_, q, k = maps.shape
        z = np.array(z, dtype=float)
        assert z.shape == (L * (q + 1) - 1, H_ * (k + 1) - 1)
        for layer in range(L):
            for h in range(H_):
                tile = z[layer * (q + 1) : layer * (q + 1) + q, h * (k + 1) : h * (k + 1) + k]
                want = (
                    np.where(np.triu(np.ones((q, k)), 1) > 0, np.nan, maps[layer, h])
                    if kind == "decoder_self"
                    else maps[layer, h]
                )
                np.testing.assert_allclose(tile, want, atol=2e-5)  # the pack's 16-bit steps of 1/65534
    assert blocked == [] and errors == [] and requests == [page.url]


def test_the_layer_and_head_selectors_change_the_map(opened):
    page, records, *_ = opened
    box = page.locator(".attention").first  # input 1, encoder self-attention
    main = box.locator(".main")
    assert main.locator(".gtitle").text_content() == rendered(
        "{title}, layer {layer}, average of heads", title=rendered("Encoder self-attention"), layer=2
    )
    box.locator("select.layer").select_option("0")
    box.locator("select.head").select_option("1")
    page.wait_for_function(
        "t => document.querySelector('.attention .main .gtitle').textContent === t",
        arg="Encoder self-attention, layer 0, head 1",
        timeout=30_000,
    )
    z = np.array(page.evaluate("document.querySelector('.attention .main').data[0].z"), dtype=float)
    np.testing.assert_allclose(z, records.inputs[0].capture.encoder_self[0, 1], atol=1e-5)
    hover = page.evaluate("document.querySelector('.attention .main').data[0].customdata")
    tokens = [display_token(t, 40) for t in records.inputs[0].capture.source_tokens]
    assert hover[2][1] == f"query 2: {tokens[2]}<br>key 1: {tokens[1]}" and len(hover) == len(tokens)


def test_a_decoder_row_is_labelled_with_the_token_it_writes(opened):
    """Issue 34: rows are the output tokens written (the decoder input shifted by one), the hover naming the input."""
    page, records, *_ = opened
    cap = records.inputs[0].capture
    written = [*cap.target_tokens[1:], cap.predicted_tokens[-1]]  # a finished output: its last row writes </s>
    box = page.locator('.attention[data-ref="0/cross"]')
    box.scroll_into_view_if_needed()
    main = '.attention[data-ref="0/cross"] .main'
    page.wait_for_function(f"(d => d && d.data)(document.querySelector('{main}'))", timeout=30_000)
    chart = page.evaluate(f"(d => ({{y: d.data[0].y, ticks: d.layout.yaxis.ticktext, cells: d.data[0].customdata}}))"
                          f"(document.querySelector('{main}'))")  # fmt: skip
    hover = [f"{display_token(i, 40)} → {display_token(w, 40)}" for i, w in zip(cap.target_tokens, written)]
    assert chart["y"] == [f"{j}: {h}" for j, h in enumerate(hover)]
    assert chart["ticks"] == [display_token(w) for w in written]
    key = display_token(cap.source_tokens[0], 40)
    assert [row[0] for row in chart["cells"]] == [f"query {j}: {h}<br>key 0: {key}" for j, h in enumerate(hover)]


def test_the_step_slider_changes_the_shown_step(opened):
    page, records, requests, blocked, errors = opened
    trace = records.inputs[0].trace
    box = page.locator(".decoding").first
    label = box.locator(".step-label")
    assert label.text_content() == f"Step 1 of {len(trace.steps)}" and box.locator(".prev").is_disabled()
    box.locator("input.step").focus()
    box.locator("input.step").press("ArrowRight")
    page.wait_for_function(
        "t => document.querySelector('.decoding .step-label').textContent === t",
        arg=f"Step 2 of {len(trace.steps)}",
        timeout=30_000,
    )
    step = trace.steps[1]
    assert box.locator(".token").text_content() == step.token
    labels = page.evaluate("document.querySelector('.decoding .topk').data[0].y")
    assert labels == [f"{i + 1}. {display_token(t)}" for i, t in enumerate(step.top_tokens)]
    cross = np.array(page.evaluate("document.querySelector('.decoding .cross-rows').data[0].z"), dtype=float)
    L, _, S = step.cross.shape
    np.testing.assert_allclose(cross, step.cross.reshape(L * H, S), atol=1e-5)
    keys = [display_token(t) for t in trace.decoder_inputs(len(trace.steps) - 1)]
    shown = page.evaluate("document.querySelector('.decoding .self-rows').layout.xaxis.ticktext")
    assert shown == keys[:2] + [""] * (len(keys) - 2)  # the keys written so far, no later token
    box.locator(".next").click()
    page.wait_for_function(
        "t => document.querySelector('.decoding .step-label').textContent === t",
        arg=f"Step 3 of {len(trace.steps)}",
        timeout=30_000,
    )
    assert box.locator(".next").is_disabled() and box.locator(".token").text_content() == trace.steps[2].token
    assert blocked == [] and errors == [] and requests == [page.url]


def test_the_pack_is_styled_for_a_projector(opened):
    """Issue 21: white charts (not plotly's grey), every tick label at least 14 px, numbered thumbnails."""
    page, *_ = opened
    sizes = page.evaluate(
        "[...document.querySelectorAll('.js-plotly-plot .xaxislayer-above text, .js-plotly-plot .yaxislayer-above text')]"
        ".map(t => parseFloat(getComputedStyle(t).fontSize))"
    )
    assert sizes and min(sizes) >= 14
    backgrounds = page.evaluate(
        "[...document.querySelectorAll('.js-plotly-plot')].map(p => p._fullLayout.plot_bgcolor)"
    )
    assert "#E5ECF6" not in backgrounds and "white" in backgrounds
    thumbs = page.evaluate(
        "document.querySelector('.attention .overview').querySelectorAll('.xaxislayer-above text').length"
    )
    assert thumbs > 0  # the bottom row of thumbnails is numbered
