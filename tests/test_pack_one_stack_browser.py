"""The lecture pack of a decoder-only and of an encoder-only model, in a real headless Chromium (file://, every other
request blocked): the page runs the model's own graph (pack/onnx_graphs.py: one graph over the whole
sequence) and shows what the app's Attention page shows for these shapes, the self-attention of the whole sequence.

A decoder-only demo (RoPE) and every one-stack family the app opens, tiny folders built here with transformers
(tests/hf_one_stack.py): GPT-2 (byte-level BPE, learned positions), Llama (RoPE, RMSNorm, SwiGLU; tokenizer.json), Llama
with grouped-query attention and a sentencepiece tokenizer.model, Qwen2 (biased q/k/v projections), BERT with and
without its masked-LM head (WordPiece), and Mistral (a sliding window shorter than the typed text: its maps show the
band, the cells outside it masked): generated inputs typed into the box give the app's warnings, ids and tokens, the
greedy continuation of model.greedy_decode (each step's top 5), and the log-probs and every attention map of the app's
capture within 1e-4; the typed input's charts show them."""

from __future__ import annotations

import random

import numpy as np
import pytest

from harness import hf_decoders
from i18n import _
from model import capture, greedy_decode, load_checkpoint
from model.checkpoints.checkpoint import load_card
from model.checkpoints.demos import list_demos
from model.interventions import NONE
from model.text.inputs import check_text, text_room
from pack.page import ENCODED, SEQUENCE
from tests.browser_helpers import chromium
from tests.hf_one_stack import BUILDERS
from tests.test_pack_parity_browser import _hover, app_warnings, assert_maps, generated_inputs, open_pack, typed
from ui.serving import caches

pytestmark = pytest.mark.filterwarnings("ignore")
TOL = 1e-4


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """name -> (model, tokenizer, card, typed texts): the decoder-only RoPE demo and a folder of each one-stack family."""
    from tests.hf_families import WORDS

    demo = next(d for d in list_demos() if d.name == "reverse_decoder_rope")
    model, tok = load_checkpoint(demo.path)
    card = load_card(demo.path)
    texts = generated_inputs(demo.name, tok, card)  # a card example, one with an unknown symbol, one with emoji
    out = {"reverse_decoder_rope": (model, tok, card, [texts[0], texts[2], texts[4]])}
    root = tmp_path_factory.mktemp("one-stack-pack")
    for name in BUILDERS:
        model, tok = load_checkpoint(BUILDERS[name](root).folder)
        rng = random.Random(name)
        texts = [
            "the cat sat on a mat",
            "The Cat sat, on a mat. 42 😀 Été «zebra»!",  # capitals, punctuation, digits, emoji, accents, unknown pieces
            " ".join(rng.choice(WORDS) for _ in range(60)),  # past max_len: the cut warning
        ]
        out[name] = (model, tok, {}, texts)
    # Mistral's sliding window (every layer local): a text longer than the window, whose band the maps mark
    model, tok = load_checkpoint(hf_decoders.build("mistral", root)[0])
    out["mistral"] = (model, tok, {}, ["the cat sat on a mat and the dog ran"])
    return out


@pytest.mark.parametrize("name", ["reverse_decoder_rope", *BUILDERS, "mistral"])
def test_a_one_stack_pack_reads_and_runs_as_the_app(name, models, browser, tmp_path):
    model, tok, card, texts = models[name]
    decoder = model.config.shape == "decoder-only"
    kind = "decoder_self" if decoder else "encoder_self"
    context, page, blocked, errors = open_pack(browser, tmp_path, model, tok, card, texts[0])
    for n, text in enumerate(texts, start=1):
        got = typed(page, text, n)
        check = check_text(text, tok.source, text_room(model.config))
        # what the app's pages show for this input: its greedy decoding, and its capture (a decoder-only model's over
        # the prompt and that continuation, as the app's shared decode builds it: ui/serving/caches.py)
        trace = greedy_decode(model, tok, check.text) if decoder else None
        cap = (
            caches._pass_on(model, tok, check.text, trace.output_ids, False, NONE)
            if decoder
            else capture(model, tok, check.text)
        )
        assert got["warnings"] == app_warnings(tok, model, card, text), text
        assert got["ids"] == (cap.target_ids if decoder else cap.source_ids).tolist()
        if decoder:
            assert got["output_ids"] == trace.output_ids, text  # the same greedy continuation, token for token
            assert got["stop"] == trace.stop_reason and got["prompt"] == len(trace.source_ids)
            assert page.text_content('[data-testid="pack-output"]') == trace.text
            for step, s in zip(got["steps"], trace.steps, strict=True):
                assert step["top"] == s.top_ids.tolist()
                np.testing.assert_allclose(step["top_probs"], s.top_probs, atol=TOL, rtol=0)
        if cap.log_probs is None:  # an encoder without an output head (BERT's base model): none on either side
            assert got["log_probs"] is None
        else:
            want = cap.log_probs
            np.testing.assert_allclose(np.reshape(got["log_probs"], want.shape), want, atol=TOL, rtol=1e-5)
        assert_maps(got[kind], getattr(cap, kind), kind)
        # the typed input's views: its tokens, its summary line (the Attention page's), its map drawn
        tokens = cap.target_tokens if decoder else cap.source_tokens
        main = page.evaluate(
            "(({data}) => ({z: data[0].z, x: data[0].x}))(document.querySelector('#live-views .attention .main'))"
        )
        assert len(main["x"]) == len(tokens)
        # issue 34's one row convention: a decoder row is the token it writes (the next one; the last row the model's
        # top choice after the text), its input in the hover; an encoder row is its own token
        labels = page.evaluate("document.querySelector('#live-views .attention .main').data[0].y")
        if decoder:
            written = [*tokens[1:], tok.target.decode([int(np.argmax(cap.log_probs[-1]))])[0]]
            assert labels == [f"{j}: {_hover(i)} → {_hover(w)}" for j, (i, w) in enumerate(zip(tokens, written))]
        else:
            assert len(labels) == len(tokens) and all("→" not in label for label in labels)
        # masked cells grey (NaN), not weight 0: keys after the query and, with a sliding window, those it leaves out
        offset = np.subtract.outer(np.arange(len(tokens)), np.arange(len(tokens)))  # query position - key position
        seen = (offset >= 0) & (offset < (hf_decoders.WINDOW if name == "mistral" else len(tokens)))
        want = np.where(seen, getattr(cap, kind)[-1].mean(0), np.nan)
        z = np.array([[np.nan if v is None else v for v in row] for row in main["z"]], dtype=float)
        np.testing.assert_allclose(z, want if decoder else getattr(cap, kind)[-1].mean(0), atol=TOL, rtol=0)
        caption = page.text_content("#live-views .sequence .caption")
        if decoder:
            prompt = len(trace.source_ids)
            assert caption == _(SEQUENCE).format(prompt=prompt, written=len(tokens) - prompt, text=trace.text)
        else:
            assert caption == _(ENCODED).format(n=len(tokens))
        charts = page.evaluate(
            "[...document.querySelectorAll('#live-views .js-plotly-plot')].filter(p => p.querySelector('.main-svg')).length"
        )
        assert charts == page.evaluate("document.querySelectorAll('#live-views .plot').length") > 0
    assert page.evaluate("document.querySelectorAll('#live-views .decoding, #live-views .cross-rows').length") == 0
    context.close()
    assert blocked == [] and errors == []
