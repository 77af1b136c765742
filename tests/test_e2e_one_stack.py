"""A decoder-only (GPT-2) and an encoder-only (BERT) folder in headless Chromium: the attention sinks of the GPT-2
model drawn with its own numbers, in English and Chinese; the decoding page's one line for BERT; no errors."""

from __future__ import annotations

import numpy as np
import pytest

from i18n import _, language_scope
from model import capture, load_checkpoint
from tests.browser_helpers import Watch, plot_data, screenshot, wait_text, wait_title
from tests.hf_one_stack import BUILDERS
from ui.shapes import NO_DECODER

pytestmark = pytest.mark.filterwarnings("ignore")
TEXT = "the cat sat on a mat"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("one-stack-e2e")
    return {name: BUILDERS[name](root).folder for name in ("gpt2", "bert-mlm")}


@pytest.fixture
def watch(browser, server):
    w = Watch(browser, server.origin)
    yield w
    w.close()


def test_the_sinks_of_a_decoder_only_model_and_the_line_of_an_encoder(watch, server, folders):
    model, tok = load_checkpoint(folders["gpt2"])
    sequence = capture(model, tok, TEXT).target_tokens  # the prompt; the page adds the model's continuation
    watch.goto(server.url("attention", model=f"path:{folders['gpt2']}", text=TEXT, att_view="sinks"))
    wait_title(watch, "Decoder self-attention (causal): share of attention on the first token", 0)
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
