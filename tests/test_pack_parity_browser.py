"""The lecture pack's in-page model against the Python model, in a real headless Chromium.

For every shipped demo: a pack opened from file:// with every other request blocked; generated inputs typed into
its box (Enter runs them); the page's greedy output must be the one model.greedy_decode writes, its log-probs
and attention maps those of model.capture within 1e-4, its warnings the app's, and every chart of the typed
input drawn. A few inputs per demo: the check is the numbers, not the count.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from i18n import _
from model import capture, greedy_decode, load_checkpoint
from model.checkpoint import load_card
from model.demos import list_demos
from model.inputs import check_text
from model.lecture import pack_records
from model.tokenizer import SPECIALS
from tests.browser_helpers import VIEWPORT, chromium
from viz.lecture_pack import lecture_pack_html

TOL = 1e-4
DEMOS = [d.name for d in list_demos()]


def generated_inputs(name: str, tokenizer, card: dict) -> list[str]:
    """A card example (capitalised where the vocabulary lowercases), random known symbols, and one unknown symbol."""
    vocab = tokenizer.source
    rng = random.Random(name)
    known = [t for t in vocab.tokens if t not in SPECIALS and t.strip()]
    joiner = "" if vocab.level == "char" else " "
    example = (card.get("examples") or [joiner.join(known[:3])])[0]
    if vocab.lowercase:
        example = example[:1].upper() + example[1:]
    random_text = joiner.join(rng.choice(known) for _ in range(rng.randint(4, 8)))
    unknown = "§" if vocab.level == "char" else "zzqx"
    with_unknown = joiner.join([rng.choice(known), unknown, rng.choice(known)])
    return [example, random_text, with_unknown]


def typed(page, text: str, n: int) -> dict:
    """Type text into the pack's box, press Enter, wait for run n to be drawn; the page's numbers of that run."""
    box = page.locator('[data-testid="pack-input"]')
    box.fill(text)
    box.press("Enter")
    page.wait_for_function("n => document.getElementById('live').dataset.drawn === String(n)", arg=n, timeout=120_000)
    return page.evaluate("window.packResult()")


@pytest.mark.parametrize("name", DEMOS)
def test_the_page_decodes_as_the_python_model(name, tmp_path):
    path = next(d.path for d in list_demos() if d.name == name)
    model, tok = load_checkpoint(path)
    texts = generated_inputs(name, tok, load_card(path))
    records = pack_records(model, tok, texts[:1], label=name)
    assert records.live is not None, records.live_note
    pack = tmp_path / "pack.html"
    pack.write_text(lecture_pack_html(records), encoding="utf-8")
    url = pack.as_uri()
    blocked, errors = [], []
    with chromium() as browser:
        context = browser.new_context(viewport=VIEWPORT)
        context.route("**/*", lambda r: r.continue_() if r.request.url == url else (blocked.append(r.request.url), r.abort()))
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(url, wait_until="load", timeout=120_000)
        page.wait_for_function("document.getElementById('live').dataset.ready === '1'", timeout=120_000)
        for n, text in enumerate(texts, start=1):
            got = typed(page, text, n)
            check = check_text(text, tok.source, model.config.max_len - 1)
            trace = greedy_decode(model, tok, check.text)
            cap = capture(model, tok, check.text)
            assert got["warnings"] == [_(w) for w in check.warnings], text
            assert got["source_ids"] == trace.source_ids
            assert got["output_ids"] == trace.output_ids, text  # the same greedy output, token for token
            assert got["stop"] == trace.stop_reason
            assert got["target_ids"] == cap.target_ids.tolist()
            np.testing.assert_allclose(np.array(got["log_probs"]), cap.log_probs, atol=TOL, rtol=0)
            for kind in ("encoder_self", "decoder_self", "cross"):
                np.testing.assert_allclose(np.array(got[kind]), getattr(cap, kind), atol=TOL, rtol=0, err_msg=kind)
            for step, s in zip(got["steps"], trace.steps):
                assert step["top"] == s.top_ids.tolist()
                np.testing.assert_allclose(step["top_probs"], s.top_probs, atol=TOL, rtol=0)
                np.testing.assert_allclose(np.array(step["cross"]), s.cross, atol=TOL, rtol=0)
                np.testing.assert_allclose(np.array(step["self"]), s.decoder_self, atol=TOL, rtol=0)
            assert page.text_content('[data-testid="pack-output"]') == trace.text
            charts = page.evaluate(
                "[...document.querySelectorAll('#live-views .js-plotly-plot')].filter(p => p.querySelector('.main-svg')).length"
            )
            assert charts > 0 and str(charts) == page.evaluate("document.getElementById('live').dataset.charts")
        context.close()
    assert blocked == [] and errors == []
