"""greedy_decode / beam_search / sample / greedy_ids with interventions: the same hooks as capture, every step."""

import json

import numpy as np
import pytest

from model import beam_search, capture, greedy_decode, sample
from model.analysis.export import trace_json
from model.decoding import greedy_ids
from model.interventions import Interventions
from tests.conftest import make_tiny


def all_heads(kind, n_layers, n_heads=3):
    return [(kind, layer, head) for layer in range(n_layers) for head in range(n_heads)]


def full_distribution(step, vocab_size):
    """(V,) the step's probabilities in id order (top_k = V keeps them all)."""
    probs = np.zeros(vocab_size)
    probs[step.top_ids] = step.top_probs
    return probs


def forced_steps(model, tokenizer, source, prefix, **kwargs):
    """Decode exactly the forced prefix, keeping the whole distribution of every step: (T, V)."""
    V = len(tokenizer.target)
    trace = greedy_decode(model, tokenizer, source, max_len=len(prefix), top_k=V, prefix=prefix, stop_at_eos=False,
                          **kwargs)  # fmt: skip
    assert trace.output_ids == list(prefix)
    return np.stack([full_distribution(s, V) for s in trace.steps]), trace


def test_without_cross_attention_decoding_no_longer_depends_on_the_source(tiny, char_tokenizer):
    prefix = char_tokenizer.target.encode("abcab")
    plain = [forced_steps(tiny, char_tokenizer, s, prefix)[0] for s in ("hello", "world wide")]
    assert np.abs(plain[0] - plain[1]).max() > 1e-3  # normally the source matters at every step
    cut = [forced_steps(tiny, char_tokenizer, s, prefix, ablate=all_heads("cross", 2)) for s in ("hello", "world wide")]
    np.testing.assert_allclose(cut[0][0], cut[1][0], atol=1e-6)
    assert cut[0][1].interventions == {"ablate": [list(h) for h in all_heads("cross", 2)]}
    assert json.loads(trace_json(cut[0][1]))["interventions"] == cut[0][1].interventions  # downloads say it too
    # and free greedy decoding (to the same step limit) writes the same text for both sources
    texts = {greedy_decode(tiny, char_tokenizer, s, max_len=20, ablate=all_heads("cross", 2)).text
             for s in ("hello", "world wide")}  # fmt: skip
    assert len(texts) == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"ablate": [("cross", 1, 0), ("decoder_self", 0, 2)]},
        {"ablate": [("encoder_self", 2, 1)], "positional": "off"},
        {"positional": "shifted", "shift": 5},
        {"positional": "shuffled", "seed": 3},
    ],
)
def test_every_step_is_the_capture_of_its_prefix_under_the_same_change(tiny, char_tokenizer, kwargs):
    trace = greedy_decode(tiny, char_tokenizer, "hello world", max_len=8, top_k=len(char_tokenizer.target),
                          stop_at_eos=False, **kwargs)  # fmt: skip
    plain = greedy_decode(tiny, char_tokenizer, "hello world", max_len=8, stop_at_eos=False)
    assert len(trace.steps) == 8
    V = len(char_tokenizer.target)
    differs = False
    for t, step in enumerate(trace.steps):
        prefix = char_tokenizer.target.detokenize(trace.output_tokens[:t])
        cap = capture(tiny, char_tokenizer, "hello world", target=prefix, **kwargs)
        np.testing.assert_allclose(full_distribution(step, V), np.exp(cap.log_probs[-1]), atol=1e-5)
        np.testing.assert_allclose(step.cross, cap.cross[:, :, -1], atol=1e-5)
        differs |= abs(step.prob - plain.steps[t].prob) > 1e-4 or step.token_id != plain.steps[t].token_id
    assert differs  # the change did change the decoding
    assert trace.interventions == cap.interventions != {}


def test_no_intervention_is_plain_decoding_bit_for_bit(char_tokenizer):
    model = make_tiny(char_tokenizer, seed=2)
    plain = greedy_decode(model, char_tokenizer, "stressed", top_k=6)
    for kwargs in ({"ablate": []}, {"ablate": None, "positional": None}, {"positional": "shifted", "shift": 0}):
        same = greedy_decode(model, char_tokenizer, "stressed", top_k=6, **kwargs)
        assert same.output_ids == plain.output_ids
        for a, b in zip(same.steps, plain.steps):
            assert a.prob == b.prob
            np.testing.assert_array_equal(a.top_probs, b.top_probs)
            np.testing.assert_array_equal(a.cross, b.cross)
            np.testing.assert_array_equal(a.decoder_self, b.decoder_self)
    assert plain.interventions == {} and same.interventions == {"positional": "shifted", "shift": 0}
    sources = [char_tokenizer.source.encode(s) + [2] for s in ("stressed", "ab", "hello world")]
    assert greedy_ids(model, sources, interventions=Interventions.make([])) == greedy_ids(model, sources)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"ablate": [("cross", 0, 1), ("encoder_self", 1, 0)]},
        {"positional": "off"},
        {"positional": "shifted", "shift": 9},
        {"positional": "shuffled", "seed": 5},
    ],
)
def test_batched_greedy_with_interventions_equals_one_at_a_time(char_tokenizer, kwargs):
    model = make_tiny(char_tokenizer, seed=1)
    texts = ["stressed", "ab", "hello world", "a", "zyxwvu tsr"]
    sources = [char_tokenizer.source.encode(s) + [2] for s in texts]
    batched = greedy_ids(model, sources, max_steps=12, interventions=Interventions.make(**kwargs))
    single = [greedy_decode(model, char_tokenizer, s, max_len=12, **kwargs) for s in texts]
    assert batched == [t.output_ids for t in single]
    assert batched != greedy_ids(model, sources, max_steps=12)  # the change changed something


def test_beam_and_sampling_take_the_same_interventions(char_tokenizer):
    model = make_tiny(char_tokenizer, seed=3)
    cut = [("cross", 0, 0), ("cross", 1, 2), ("decoder_self", 1, 1)]
    greedy = greedy_decode(model, char_tokenizer, "hello there", ablate=cut, positional="shifted", shift=2)
    assert greedy.output_ids != greedy_decode(model, char_tokenizer, "hello there").output_ids
    beam = beam_search(model, char_tokenizer, "hello there", beam_size=1, ablate=cut, positional="shifted", shift=2)
    assert beam.output_ids == greedy.output_ids
    assert beam.interventions == greedy.interventions == {"ablate": [list(h) for h in sorted(cut)],
                                                          "positional": "shifted", "shift": 2}  # fmt: skip
    cold = sample(model, char_tokenizer, "hello there", temperature=0, ablate=cut, positional="shifted", shift=2)
    assert cold.output_ids == greedy.output_ids and cold.interventions == greedy.interventions
    shuffled = greedy_decode(model, char_tokenizer, "hello there", positional="shuffled", seed=4)
    drawn = sample(model, char_tokenizer, "hello there", temperature=0, positional="shuffled", shuffle_seed=4)
    assert drawn.output_ids == shuffled.output_ids and drawn.interventions == {"positional": "shuffled", "seed": 4}
    wide = beam_search(model, char_tokenizer, "hello there", beam_size=3, positional="shuffled", seed=4)
    assert wide.best is not None and wide.interventions == {"positional": "shuffled", "seed": 4}


def test_a_shift_shortens_the_step_limit_to_fit_the_table(tiny, char_tokenizer):
    # tiny: max_len 64; "hello" is 6 source tokens; a shift of 50 leaves room for 14 decoder positions
    trace = greedy_decode(tiny, char_tokenizer, "hello", positional="shifted", shift=50, stop_at_eos=False)
    assert len(trace.steps) == 64 - 50 and trace.stop_reason == "max_len"
    with pytest.raises(ValueError, match="needs 66 positional rows; the model has 64"):
        greedy_decode(tiny, char_tokenizer, "hello", positional="shifted", shift=60)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, t, kw: greedy_decode(m, t, "hello", **kw),
        lambda m, t, kw: beam_search(m, t, "hello", beam_size=2, **kw),
        lambda m, t, kw: sample(m, t, "hello", **{("shuffle_seed" if k == "seed" else k): v for k, v in kw.items()}),
    ],
    ids=["greedy", "beam", "sample"],
)
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"ablate": [("sideways", 0, 0)]}, "kind must be one of"),
        ({"ablate": [("cross", 2, 0)]}, "the model has 2 cross layers"),
        ({"ablate": [("encoder_self", 0, 3)]}, "the model has 3 heads"),
        ({"positional": "backwards"}, "positional must be None or one of off, shuffled, shifted"),
        ({"positional": "shuffled", "seed": -2}, "seed must be a whole number"),
    ],
)
def test_bad_interventions_are_named_before_decoding(tiny, char_tokenizer, call, kwargs, message):
    with pytest.raises(ValueError, match=message):
        call(tiny, char_tokenizer, kwargs)
    assert all(not m._forward_hooks for m in tiny.modules())
