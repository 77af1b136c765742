"""One decode per (model, input, interventions), shared by every page through the cache (issue 23): the captures
made on the shared decode's ids are the captures the library makes, and a second and third page opening the same
new input decode nothing."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

from model import capture, greedy_decode, load_checkpoint
from model.interventions import Interventions
from tests.apptest_helpers import open_page
from tests.browser_helpers import letters_checkpoint
from ui.serving import caches

REVERSE = Path(__file__).resolve().parents[1] / "checkpoints" / "reverse"


@pytest.fixture(scope="module")
def reverse():
    model, tok = load_checkpoint(REVERSE)
    return model, tok


def same_capture(a, b) -> None:
    for name, value in a.arrays().items():
        np.testing.assert_allclose(value, b.arrays()[name], atol=1e-6, err_msg=name)
    assert (a.source_tokens, a.target_tokens, a.predicted_tokens) == (b.source_tokens, b.target_tokens,
                                                                       b.predicted_tokens)  # fmt: skip
    assert (a.generated, a.interventions, a.target_truncated) == (b.generated, b.interventions, b.target_truncated)
    assert sorted(a.qkv) == sorted(b.qkv)
    for kind in a.qkv:
        for x, y in zip(a.qkv[kind], b.qkv[kind]):
            np.testing.assert_allclose(x, y, atol=1e-6)


CHANGES = [Interventions(), Interventions.make([("cross", 0, 1)]), Interventions.make(positional="off")]


@pytest.mark.parametrize("qkv", [False, True])
@pytest.mark.parametrize("changes", CHANGES)
def test_a_capture_on_the_shared_decode_is_the_librarys_capture(reverse, qkv, changes):
    model, tok = reverse
    text = "abcdefg"
    ours = caches._capture(f"demo:reverse|{qkv}", text, None, model, tok, qkv, changes)
    kwargs = dict(ablate=sorted(changes.ablate), positional=changes.positional, shift=changes.shift, seed=changes.seed)
    same_capture(ours, capture(model, tok, text, None, qkv=qkv, **kwargs))
    assert ours.generated and ours.target_tokens[1:] == list(reversed(text))  # the demo reverses: the real output


@pytest.mark.parametrize("top_k", [3, 10])
@pytest.mark.parametrize("changes", CHANGES)
def test_the_steps_read_from_one_pass_are_the_step_by_step_decoding(reverse, top_k, changes):
    model, tok = reverse
    text = "hello"
    ours = caches.cached_trace(f"demo:reverse|{top_k}", text, (), top_k, model, tok, changes)
    direct = greedy_decode(model, tok, text, top_k=top_k, interventions=changes)
    assert [s.token_id for s in ours.steps] == [s.token_id for s in direct.steps]
    assert (ours.text, ours.stop_reason, ours.interventions) == (direct.text, direct.stop_reason, direct.interventions)
    assert (ours.source_tokens, ours.start_token) == (direct.source_tokens, direct.start_token)
    for a, b in zip(ours.steps, direct.steps, strict=True):
        assert a.index == b.index and a.token == b.token and list(a.top_ids) == list(b.top_ids)
        assert a.top_tokens == b.top_tokens and a.forced == b.forced
        np.testing.assert_allclose([a.prob, *a.top_probs], [b.prob, *b.top_probs], atol=1e-5)
        np.testing.assert_allclose(a.decoder_self, b.decoder_self, atol=1e-5)
        np.testing.assert_allclose(a.cross, b.cross, atol=1e-5)


def test_a_shift_that_cuts_the_decoding_short_reads_the_same_steps(tmp_path):
    model, tok = load_checkpoint(letters_checkpoint(tmp_path))  # random weights: it writes no </s> here
    shifted = Interventions.make(positional="shifted", shift=3)
    ours = caches.cached_trace("letters|shift", "abcd", (), 5, model, tok, shifted)
    direct = greedy_decode(model, tok, "abcd", top_k=5, interventions=shifted)
    assert direct.stop_reason == "max_len" and ours.stop_reason == "max_len"  # the shift left no room for more
    assert ours.output_ids == direct.output_ids
    for a, b in zip(ours.steps, direct.steps, strict=True):
        np.testing.assert_allclose(a.cross, b.cross, atol=1e-5)
        np.testing.assert_allclose(a.top_probs, b.top_probs, atol=1e-5)


def test_a_shuffle_and_a_forced_prefix_still_decode_step_by_step(reverse):
    model, tok = reverse
    shuffled = Interventions.make(positional="shuffled", seed=3)
    ours = caches.cached_trace("demo:reverse|shuffle", "hello", (), 5, model, tok, shuffled)
    assert [s.token_id for s in ours.steps] == greedy_decode(model, tok, "hello", interventions=shuffled).output_ids
    forced = caches.cached_trace("demo:reverse|prefix", "hello", (7,), 5, model, tok)
    assert forced.steps[0].forced and forced.output_ids[0] == 7


@pytest.fixture
def decodes(monkeypatch):
    """Counts every decoding a page runs: the caches' greedy_decode (by its text), and the greedy decoding inside
    capture() of a model's own output (by "capture")."""
    capture_module = importlib.import_module("model.analysis.capture")  # `model.capture` is the function of that name
    decoding = importlib.import_module("model.decoding")
    calls = []
    real, real_ids, in_capture = caches.greedy_decode, decoding.greedy_ids, capture_module.greedy_ids

    def counted(*args, **kwargs):  # greedy_decode(model, tokenizer, text, ...)
        calls.append(args[2])
        return real(*args, **kwargs)

    def counted_ids(*args, **kwargs):  # greedy_ids(model, [source ids], ...): one source each time here
        calls.append(len(args[1][0]))
        return real_ids(*args, **kwargs)

    def counted_in_capture(*args, **kwargs):
        calls.append("capture")
        return in_capture(*args, **kwargs)

    monkeypatch.setattr(caches, "greedy_decode", counted)
    monkeypatch.setattr(decoding, "greedy_ids", counted_ids)
    monkeypatch.setattr(capture_module, "greedy_ids", counted_in_capture)
    for cache in (caches.CAPTURES, caches.TRACES, caches.QKV, caches.DECODES):
        cache.clear()
    return calls


def test_three_pages_in_a_row_decode_a_new_input_once(decodes):
    text = "abcabcdd"
    for page in ("attention", "decoding", "inside"):
        at = open_page(page, "demo:reverse", text=text)
        assert not at.exception, at.exception
        assert decodes == [len(text) + 1], page  # the first page decoded it (the source and </s>); the others did not
    assert at.session_state["in_kind"] == "cross"  # the Inside page drew its capture
    open_page("attention", "demo:reverse", text=text + "a")
    assert decodes == [len(text) + 1, len(text) + 2]  # a new input is decoded, once
