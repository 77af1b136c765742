"""The positional page's views of each positional kind (issue 24) in headless Chromium, at a projector's 1366x768
with presentation mode (present=1): for a model of each kind its own view and "This model & input", charts drawn
with the model's numbers, nothing wider than the window, no errors. Screenshots go to test-artifacts/."""

from __future__ import annotations

import pytest

from model import Tokenizer, TransformerConfig, Vocab, build_model, save_checkpoint
from tests.browser_helpers import _FIND_PLOT, PROJECTOR, WAIT_S, Watch, plot_data, screenshot, wait_text, wait_title
from tests.i18n_helpers import msgid_starting, rendered

# what RoPE, ALiBi and T5's bias each say of the embeddings (after "This model uses ...:", before the rest)
NOTHING_ADDED = rendered(msgid_starting("This model uses ALiBi: nothing is added")).split(": ", 1)[1].split(" (")[0]

# kind -> (its view, the title of a chart drawn from the model's numbers, the chart's index on the view)
VIEWS = {
    "rope": ("rope", "Pair 0: turns 1 rad per position", 0),
    "alibi": ("alibi", "ALiBi slopes 2^(−8(h+1)/H), heads h = 0 … H−1", 1),
    "relative": ("relative", "Encoder: learned bias of this model", 1),
    "sinusoidal": ("shift", "M_k for k = 5 (first 16 dimensions)", 0),
}
WIDE_ELEMENTS = """() => [...document.querySelectorAll('.js-plotly-plot, [data-testid="stMarkdown"]')]
    .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).length"""


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kinds")
    vocab = Vocab.build("abcdefgh", level="char")
    out = {}
    for kind in VIEWS:
        config = TransformerConfig.preset(
            "tiny", src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), n_heads=4, max_len=32, positional=kind
        )
        out[kind] = save_checkpoint(build_model(config, seed=2), Tokenizer(vocab, vocab), folder / kind)
    return out


@pytest.fixture
def watch(browser, server):
    w = Watch(browser, server.origin)
    w.page.set_viewport_size(PROJECTOR)
    yield w
    w.close()


@pytest.mark.parametrize("kind", sorted(VIEWS))
def test_each_kinds_view_at_projector_size(watch, server, models, kind):
    view, title, plot = VIEWS[kind]
    page = watch.page
    watch.goto(server.url("positional", model=f"path:{models[kind]}", text="abc", present="1", pe_view=view))
    wait_title(watch, title, plot)
    if kind == "alibi":  # the model's 4 heads: slopes 2^-2, 2^-4, 2^-6, 2^-8
        assert plot_data(page, plot, 0, "y").tolist() == [0.25, 0.0625, 0.015625, 0.00390625]
    assert page.evaluate(WIDE_ELEMENTS) == 0, "a chart or text runs past the window"
    screenshot(page, f"e2e_positional_{kind}_present")
    watch.goto(server.url("positional", model=f"path:{models[kind]}", text="abc", present="1", pe_view="mine"))
    wait_title(watch, rendered("Source: embedding size against positional signal"), 0)
    if kind != "sinusoidal":
        wait_text(watch, NOTHING_ADDED)
    screenshot(page, f"e2e_positional_{kind}_mine_present")
    watch.assert_clean()


def test_length_experiment_and_six_kinds_at_projector_size(watch, server):
    """The shipped reverse demos: their cards' length curves drawn at once, one line per kind; the six side by side."""
    page = watch.page
    watch.goto(server.url("positional", model="demo:reverse", text="abc", present="1", pe_view="length"))
    wait_title(watch, rendered("Exact match by input length"), 0)
    names = page.evaluate(f"() => {{ {_FIND_PLOT} return findPlot(0).data.map(t => t.name); }}")
    from i18n import _
    from ui.views.positional_models import DECODER, decoder_models
    from ui.views.positional_names import KINDS

    decoders = [_(DECODER).format(kind=_(KINDS[kind])) for kind in decoder_models()]  # the NoPE lesson's two demos
    assert names == ["Sinusoidal (fixed)", "Learned", "None", "RoPE", "ALiBi", "T5 relative bias", *decoders]
    assert len(decoders) == 2
    assert plot_data(page, 0, 0, "x").tolist() == list(range(1, 49))
    assert page.evaluate(WIDE_ELEMENTS) == 0
    screenshot(page, "e2e_positional_length_present")
    watch.goto(server.url("positional", model="demo:reverse", text="abc", present="1", pe_view="models"))
    page.wait_for_function(  # the second chart (the bias row), its last map's title: every map drawn
        f"() => {{ {_FIND_PLOT} const p = findPlot(1); return !!p && [...p.querySelectorAll('.annotation-text')]"
        ".some(a => a.textContent === 'T5 relative bias'); }",
        timeout=WAIT_S * 1000,
    )
    assert page.evaluate(WIDE_ELEMENTS) == 0
    screenshot(page, "e2e_positional_models_present")
    watch.assert_clean()
