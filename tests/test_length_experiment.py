"""The length experiment: its strings, and exact match per length against one-at-a-time greedy decoding."""

import numpy as np
import pytest
import torch

from model import Tokenizer, Vocab, greedy_decode
from tasks.length_experiment import examples_by_length, length_curve
from tasks.tasks import ALPHABET
from tests.conftest import make_tiny


@pytest.fixture
def letters():
    vocab = Vocab.build(list(ALPHABET), level="char")
    return Tokenizer(vocab, vocab)


def test_strings_have_exactly_each_length_are_distinct_and_fresh_where_possible():
    trained = {"ab", "cd", "abcde"}
    ex = examples_by_length("reverse", [1, 2, 5, 30], 25, exclude=trained)
    assert [len(ex[n]) for n in (1, 2, 5, 30)] == [20, 25, 25, 25]  # only 20 strings of one letter exist
    for n, examples in ex.items():
        sources = [e.source for e in examples]
        assert all(len(s) == n and set(s) <= set(ALPHABET) for s in sources) and len(set(sources)) == len(sources)
        assert all(e.target == e.source[::-1] for e in examples)
        if n > 1:
            assert not trained & set(sources)
    # all 400 two-letter strings but 3 excluded: 397 fresh first, then the excluded ones fill up
    every = examples_by_length("reverse", [2], 400, exclude=trained)[2]
    assert {e.source for e in every[-2:]} == {"ab", "cd"} and "ab" not in {e.source for e in every[:398]}
    assert examples_by_length("copy", [4], 3)[4][0].target == examples_by_length("copy", [4], 3)[4][0].source


def test_same_seed_same_strings_and_bad_arguments_are_named():
    assert examples_by_length("reverse", [7], 5) == examples_by_length("reverse", [7], 5)
    with pytest.raises(ValueError, match="copy or reverse"):
        examples_by_length("dates", [3], 5)
    with pytest.raises(ValueError, match="n must be"):
        examples_by_length("reverse", [3], 0)


@pytest.mark.parametrize("kind", ["sinusoidal", "rope"])
def test_curve_counts_what_one_at_a_time_decoding_gets_right(letters, kind):
    model = make_tiny(letters, positional=kind)
    with torch.no_grad():
        model.generator.bias[model.config.eos_id] += 3.0  # a random model that often stops: some outputs end
    ex = examples_by_length("reverse", [1, 2, 3], 20)
    steps = 4  # the curve allows one token past the longest target

    def decoded(source):
        trace = greedy_decode(model, letters, source, max_len=steps)
        return trace.output_ids, trace.text

    for n in (1, 2, 3):  # half the targets become the model's own output, so the counts are not all zero
        for i in range(0, 20, 2):
            e = ex[n][i]
            ex[n][i] = type(e)(e.source, decoded(e.source)[1], e.alignment)
    curve = length_curve(model, letters, ex, batch_size=7)  # batches that straddle lengths
    total = 0
    for n, score in zip(curve.lengths, curve.exact_match):
        want = [decoded(e.source)[0] == letters.target.encode(e.target) + [model.config.eos_id] for e in ex[n]]
        assert score == pytest.approx(np.mean(want))
        total += sum(want)
    assert total > 0 and list(curve.examples) == [20, 20, 20]


def test_shift_past_max_len_is_refused(letters):
    model = make_tiny(letters, max_len=16)
    with pytest.raises(ValueError, match="max_len"):
        length_curve(model, letters, examples_by_length("reverse", [6], 2), shift=12)


def test_card_entry_round_trips_and_holds_up_to_reads_the_curve():
    from tasks.length_experiment import LengthCurve, all_below_from, card_curve, card_entry, holds_up_to, training_range

    lengths = np.arange(1, 7)
    curves = [
        LengthCurve(lengths, np.array([1, 1, 0.9, 0.4, 0.6, 0]), np.full(6, 50), 0),
        LengthCurve(lengths, np.array([0.2, 0, 0, 0, 0, 0]), np.full(6, 50), 3),
    ]
    card = {"length_experiment": card_entry(curves, "2026-11-25"), "input_tokens": {"min": 1, "max": 24}}
    back = card_curve(card, 3)
    assert back.shift == 3 and np.allclose(back.exact_match, curves[1].exact_match)
    assert card_curve(card, 5) is None and card_curve(card, 0, n=20) is None
    assert holds_up_to(curves[0]) == 3 and holds_up_to(curves[1]) == 0
    assert all_below_from(curves[0], 0.5) == 6 and all_below_from(curves[1], 0.1) == 2  # 0.6 at 5: not from 4
    assert all_below_from(LengthCurve(lengths, np.ones(6), np.full(6, 50), 0), 0.5) == 7
    assert training_range(card) == (1, 24)
    with pytest.raises(ValueError):
        training_range({})
