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
from ui import caches

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


@pytest.mark.parametrize("qkv", [False, True])
@pytest.mark.parametrize(
    "changes", [Interventions(), Interventions.make([("cross", 0, 1)]), Interventions.make(positional="off")]
)
def test_a_capture_on_the_shared_decode_is_the_librarys_capture(reverse, qkv, changes):
    model, tok = reverse
    caches.TRACES.clear()
    text = "abcdefg"
    ours = caches._capture(f"demo:reverse|{qkv}", text, None, model, tok, qkv, changes)
    kwargs = dict(ablate=sorted(changes.ablate), positional=changes.positional, shift=changes.shift, seed=changes.seed)
    same_capture(ours, capture(model, tok, text, None, qkv=qkv, **kwargs))
    assert ours.generated and ours.target_tokens[1:] == list(reversed(text))  # the demo reverses: the real output


def test_fewer_candidates_are_the_first_of_the_shared_decode(reverse):
    model, tok = reverse
    caches.TRACES.clear()
    cut = caches.cached_trace("demo:reverse", "hello", (), 3, model, tok)
    direct = greedy_decode(model, tok, "hello", top_k=3)
    assert [s.token_id for s in cut.steps] == [s.token_id for s in direct.steps] and cut.text == direct.text
    for a, b in zip(cut.steps, direct.steps):
        assert list(a.top_ids) == list(b.top_ids) and a.top_tokens == b.top_tokens
        np.testing.assert_allclose(a.top_probs, b.top_probs, atol=1e-6)
        np.testing.assert_allclose(a.cross, b.cross, atol=1e-6)
    assert len(caches.TRACES) == 1  # kept once, with DECODE_TOP_K candidates


@pytest.fixture
def decodes(monkeypatch):
    """Counts every decoding a page runs: the caches' greedy_decode (by its text), and the greedy decoding inside
    capture() of a model's own output (by "capture")."""
    capture_module = importlib.import_module("model.capture")  # `model.capture` is the function of that name
    calls = []
    real, real_ids = caches.greedy_decode, capture_module.greedy_ids

    def counted(*args, **kwargs):
        calls.append(args[2])
        return real(*args, **kwargs)

    def counted_ids(*args, **kwargs):
        calls.append("capture")
        return real_ids(*args, **kwargs)

    monkeypatch.setattr(caches, "greedy_decode", counted)
    monkeypatch.setattr(capture_module, "greedy_ids", counted_ids)
    for cache in (caches.CAPTURES, caches.TRACES, caches.QKV):
        cache.clear()
    return calls


def test_three_pages_in_a_row_decode_a_new_input_once(decodes):
    text = "abcabcdd"
    for page in ("attention", "decoding", "inside"):
        at = open_page(page, "demo:reverse", text=text)
        assert not at.exception, at.exception
        assert decodes == [text], page  # the first page decoded it; the others read the cache
    assert at.session_state["in_kind"] == "cross"  # the Inside page drew its capture
    open_page("attention", "demo:reverse", text=text + "a")
    assert decodes == [text, text + "a"]  # a new input is decoded, once
