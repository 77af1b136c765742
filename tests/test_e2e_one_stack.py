"""A decoder-only (GPT-2) and an encoder-only (BERT) folder in headless Chromium: the attention sinks of the GPT-2
model drawn with its own numbers, in English and Chinese; the decoding page's one line for BERT; no errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

from i18n import _, language_scope
from model import capture, load_checkpoint
from tests.browser_helpers import plot_data, screenshot, wait_text, wait_title
from tests.hf_one_stack import BUILDERS
from tests.i18n_helpers import rendered
from ui.shell.shapes import NO_DECODER

pytestmark = pytest.mark.filterwarnings("ignore")
TEXT = "the cat sat on a mat"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("one-stack-e2e")
    return {name: BUILDERS[name](root).folder for name in ("gpt2", "bert-mlm")}


def test_the_sinks_of_a_decoder_only_model_and_the_line_of_an_encoder(watch, server, folders):
    model, tok = load_checkpoint(folders["gpt2"])
    sequence = capture(model, tok, TEXT).target_tokens  # the prompt; the page adds the model's continuation
    watch.goto(server.url("attention", model=f"path:{folders['gpt2']}", text=TEXT, att_view="sinks"))
    first = rendered(
        "{title}: share of attention on the first token", title=rendered("Decoder self-attention (causal)")
    )
    wait_title(watch, first, 0)
    shown = plot_data(watch.page, 0, 0, "z")
    assert shown.shape == (model.config.n_decoder_layers, model.config.n_heads)
    assert np.all((shown >= 0) & (shown <= 1)) and len(sequence) > 1
    screenshot(watch.page, "e2e_one_stack_sinks")
    with language_scope("zh"):
        title = _("{title}: share of attention on the first token").format(title=_("Decoder self-attention (causal)"))
        line = _(NO_DECODER)
    watch.goto(server.url("attention", model=f"path:{folders['gpt2']}", text=TEXT, att_view="sinks", lang="zh"))
    wait_title(watch, title, 0)
    np.testing.assert_allclose(plot_data(watch.page, 0, 0, "z"), shown, atol=1e-6)
    watch.goto(server.url("decoding", model=f"path:{folders['bert-mlm']}", text=TEXT, lang="zh"))
    wait_text(watch, line)
    watch.assert_clean()


def test_the_attribution_page_of_decoder_only_models(watch, server, folders):
    """The Attribution page in Chromium: the decoder-only demo in English, the GPT-2 folder in Chinese; occlusion's
    bars over the prompt are attribute()'s for the continuation's first token, the self-attention panel beside them."""
    from pathlib import Path

    from model import attribute
    from ui.views.attribution_ui import SELF_WORDS

    demo = Path(__file__).resolve().parents[1] / "checkpoints" / "reverse_decoder_rope"
    cases = [("demo:reverse_decoder_rope", str(demo), "stressed=", "en"), (None, str(folders["gpt2"]), TEXT, "zh")]
    for name, path, text, lang in cases:
        model, tok = load_checkpoint(path)
        occ = attribute(model, tok, text, method="occlusion")
        last = model.config.n_decoder_layers - 1
        with language_scope(lang):
            title = _("What explains output token {t} “{token}”?").format(t=0, token=occ.output_tokens[0])
            panel = _(SELF_WORDS.average).format(layer=last)
        watch.goto(server.url("attribution", model=name or f"path:{path}", text=text, lang=lang))
        wait_title(watch, title, 0)
        np.testing.assert_allclose(plot_data(watch.page, 0, 2, "x"), occ.scores[0], atol=1e-5)
        panels = watch.page.locator(".js-plotly-plot").first.locator(".annotation-text").all_text_contents()
        squeeze = re.compile(r"\s+")  # titles wrap to their panels (a line break for a space)
        assert squeeze.sub("", panel) in [squeeze.sub("", p) for p in panels], panels
        screenshot(watch.page, f"e2e_one_stack_attribution_{lang}")
    watch.assert_clean()
