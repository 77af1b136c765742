"""capture(..., ablate=..., positional=...): heads switched off and positions changed for one pass only."""

import copy
import json
import threading

import numpy as np
import pytest

from model import capture
from model.analysis.export import capture_json
from tests.conftest import make_tiny, without_positions


def all_heads(kind, n_layers, n_heads=3):
    return [(kind, layer, head) for layer in range(n_layers) for head in range(n_heads)]


def test_without_cross_attention_the_source_no_longer_matters(tiny, char_tokenizer):
    plain = [capture(tiny, char_tokenizer, s, target="abc") for s in ("hello", "world wide")]
    assert np.abs(plain[0].log_probs - plain[1].log_probs).max() > 1e-3  # the source matters normally
    cut = [
        capture(tiny, char_tokenizer, s, target="abc", ablate=all_heads("cross", 2)) for s in ("hello", "world wide")
    ]
    np.testing.assert_allclose(cut[0].log_probs, cut[1].log_probs, atol=1e-5)
    assert cut[0].log_probs.shape == (4, len(char_tokenizer.target))
    np.testing.assert_allclose(np.exp(cut[0].log_probs).sum(-1), 1, atol=1e-5)
    assert cut[0].interventions == {
        "ablate": [["cross", 0, 0], ["cross", 0, 1], ["cross", 0, 2], ["cross", 1, 0], ["cross", 1, 1], ["cross", 1, 2]]
    }
    assert plain[0].interventions == {}


def test_an_ablated_head_outputs_zeros_before_w_o(tiny, char_tokenizer):
    plain = capture(tiny, char_tokenizer, "hello", target="abc", qkv=True)
    cut = capture(tiny, char_tokenizer, "hello", target="abc", qkv=True, ablate=[("encoder_self", 1, 2)])
    heads = cut.head_outputs["encoder_self"]
    assert (heads[1, 2] == 0).all() and np.abs(plain.head_outputs["encoder_self"][1, 2]).max() > 0
    np.testing.assert_allclose(
        heads[:, :2][1], plain.head_outputs["encoder_self"][1, :2], atol=1e-6
    )  # same layer input
    np.testing.assert_allclose(
        heads[0], plain.head_outputs["encoder_self"][0], atol=1e-6
    )  # the layer before: untouched
    assert np.abs(heads[2] - plain.head_outputs["encoder_self"][2]).max() > 1e-4  # the layer after sees the change
    assert np.abs(cut.log_probs - plain.log_probs).max() > 1e-4


def test_positional_off_is_the_model_without_positional_rows(tiny, char_tokenizer):
    off = capture(tiny, char_tokenizer, "hello", target="abc", positional="off")
    reference = capture(without_positions(tiny), char_tokenizer, "hello", target="abc")
    np.testing.assert_allclose(off.log_probs, reference.log_probs, atol=1e-5)
    np.testing.assert_allclose(off.encoder_self, reference.encoder_self, atol=1e-6)
    assert (off.source_pe == 0).all() and (off.target_pe == 0).all()
    assert off.interventions == {"positional": "off"}


def test_positional_shifted_reads_the_rows_k_later(tiny, char_tokenizer):
    shifted = capture(tiny, char_tokenizer, "hello", target="abc", positional="shifted", shift=7)
    other = copy.deepcopy(tiny)
    for _, module in other.positional_encodings():
        module.table[:-7] = module.table[7:].clone()
    reference = capture(other, char_tokenizer, "hello", target="abc")
    np.testing.assert_allclose(shifted.log_probs, reference.log_probs, atol=1e-5)
    np.testing.assert_allclose(shifted.source_pe, tiny.src_pe.table[7:13].numpy())
    assert shifted.interventions == {"positional": "shifted", "shift": 7}


def test_positional_shuffled_is_a_fixed_permutation(tiny, char_tokenizer):
    plain = capture(tiny, char_tokenizer, "abcdefgh", target="abc")
    one = capture(tiny, char_tokenizer, "abcdefgh", target="abc", positional="shuffled", seed=1)
    again = capture(tiny, char_tokenizer, "abcdefgh", target="abc", positional="shuffled", seed=1)
    other = capture(tiny, char_tokenizer, "abcdefgh", target="abc", positional="shuffled", seed=2)
    order = [int(np.argmin(np.abs(plain.source_pe - row).sum(1))) for row in one.source_pe]
    assert sorted(order) == list(range(9)) and order != list(range(9))
    np.testing.assert_allclose(one.source_pe, plain.source_pe[order])
    np.testing.assert_array_equal(one.source_pe, again.source_pe)
    assert np.abs(one.source_pe - other.source_pe).max() > 0
    assert one.interventions == {"positional": "shuffled", "seed": 1}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"ablate": [("sideways", 0, 0)]}, "kind must be one of"),
        ({"ablate": [("cross", 2, 0)]}, "the model has 2 cross layers"),
        ({"ablate": [("encoder_self", 0, 3)]}, "the model has 3 heads"),
        ({"ablate": [("cross", 0)]}, r"is \(kind, layer, head\)"),
        ({"ablate": [("cross", "0", 1)]}, "whole numbers"),
        ({"positional": "backwards"}, "positional must be None or one of off, shuffled, shifted"),
        ({"positional": "shifted", "shift": 60}, "needs 66 positional rows; the model has 64"),
        ({"positional": "shifted", "shift": -1}, "shift must be a whole number"),
    ],
)
def test_bad_interventions_are_named(tiny, char_tokenizer, kwargs, message):
    with pytest.raises(ValueError, match=message):
        capture(tiny, char_tokenizer, "hello", target="abc", **kwargs)
    assert all(not m._forward_hooks for m in tiny.modules())


def test_an_intervention_changes_only_its_own_pass(char_tokenizer):
    model = make_tiny(char_tokenizer, seed=4)
    plain = capture(model, char_tokenizer, "alpha bravo", target="abc")
    cut = capture(model, char_tokenizer, "alpha bravo", target="abc", ablate=all_heads("cross", 2), positional="off")
    results: dict = {}
    barrier = threading.Barrier(8)

    def work(i):
        barrier.wait()
        for _ in range(3):
            kwargs = {"ablate": all_heads("cross", 2), "positional": "off"} if i % 2 else {}
            results[i] = capture(model, char_tokenizer, "alpha bravo", target="abc", **kwargs)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for i, got in results.items():
        np.testing.assert_allclose(got.log_probs, (cut if i % 2 else plain).log_probs, atol=1e-6)
    again = capture(model, char_tokenizer, "alpha bravo", target="abc")  # and the shared model itself is unchanged
    np.testing.assert_allclose(again.log_probs, plain.log_probs, atol=1e-6)
    assert all(not m._forward_hooks for m in model.modules())


def test_downloads_say_what_was_changed(tiny, char_tokenizer):
    cut = capture(tiny, char_tokenizer, "hello", target="abc", ablate=[("cross", 1, 0)], positional="shifted", shift=2)
    data = json.loads(capture_json(cut))
    assert data["interventions"] == {"ablate": [["cross", 1, 0]], "positional": "shifted", "shift": 2}
    assert json.loads(capture_json(capture(tiny, char_tokenizer, "hello", target="abc")))["interventions"] == {}
