"""The lecture pack's decoding section opened by its link, and stepped before its charts are drawn (issue 21).

Its own file: tests/test_lecture_pack_browser.py holds one browser open for its module.
"""

from __future__ import annotations

import numpy as np

from tests.browser_helpers import VIEWPORT, chromium
from tests.test_lecture_pack import H, fake_records
from viz.lecture_pack import lecture_pack_html


def test_decoding_is_drawn_on_open_and_next_before_drawing_raises_nothing(tmp_path):
    """Issue 21: the decoding section of the last input, opened by its link, shows its step and charts; Next pressed
    before any chart is drawn moves the step without a page error, and the charts then show that step."""
    records = fake_records(2)
    path = tmp_path / "pack.html"
    path.write_text(lecture_pack_html(records), encoding="utf-8")
    trace = records.inputs[1].trace
    errors = []
    with chromium() as browser:
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri() + "#in1-decoding", wait_until="domcontentloaded", timeout=60_000)
        box = page.locator(".decoding").nth(1)
        assert box.locator(".token").text_content() == trace.steps[0].token  # the words at once, before any chart
        box.locator(".next").click()
        assert box.locator(".step-label").text_content() == f"Step 2 of {len(trace.steps)}"
        page.wait_for_function("document.querySelectorAll('.decoding')[1].dataset.shown === '1'", timeout=120_000)
        cross = np.array(page.evaluate("document.querySelectorAll('.decoding .cross-rows')[1].data[0].z"), dtype=float)
        L, _, S = trace.steps[1].cross.shape
        np.testing.assert_allclose(cross, trace.steps[1].cross.reshape(L * H, S), atol=1e-5)
        assert box.locator(".token").text_content() == trace.steps[1].token
        page.wait_for_function("document.body.dataset.drawn !== undefined", timeout=120_000)
        assert page.evaluate("document.body.dataset.drawn") != "error"
        context.close()
    assert errors == []
