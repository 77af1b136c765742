"""Head importance, decoding and exact match under interventions as the pages call them, checked against models
changed by hand."""

import copy

import numpy as np
import pytest
import torch

from model import capture, greedy_decode
from model.analysis.importance import head_importance, output_log_probs
from model.analysis.pe_analysis import cosine_similarity
from model.interventions import Interventions
from model.interventions.effects import max_shift
from tasks.intervened import UnknownTraining, exact_match_with, fresh_examples
from tasks.registry import get_task
from tasks.tasks import dataset
from tests.conftest import without_positions


def decode(model, tokenizer, text, changes=Interventions(), top_k=5, prefix=()):
    """Greedy decoding with `changes` applied at every step, as the pages ask for it."""
    return greedy_decode(model, tokenizer, text, top_k=top_k, prefix=prefix, interventions=changes)


def without_head(model, kind, layer, head):
    """A copy whose W^O ignores one head: the same as zeroing that head's output before W^O."""
    other = copy.deepcopy(model)
    module = dict(((k, i), m) for k, i, m in other.attention_modules())[(kind, layer)]
    dk = other.config.d_model // other.config.n_heads
    with torch.no_grad():
        module.out_proj.weight[:, head * dk : (head + 1) * dk] = 0
    return other


def test_head_importance_is_the_drop_of_each_ablated_capture(tiny, char_tokenizer):
    done = []
    found = head_importance(tiny, char_tokenizer, "hello", target="abc", progress=lambda d, n: done.append((d, n)))
    plain = output_log_probs(capture(tiny, char_tokenizer, "hello", target="abc"), tiny.config.eos_id).sum()
    assert found.baseline == pytest.approx(plain, abs=1e-4)
    assert found.output_tokens == ["a", "b", "c", "</s>"]
    assert {k: d.shape for k, d in found.drop.items()} == {
        "encoder_self": (3, 3),
        "decoder_self": (2, 3),
        "cross": (2, 3),
    }
    for kind, layer, head in [("encoder_self", 2, 1), ("decoder_self", 0, 2), ("cross", 1, 0)]:
        other = without_head(tiny, kind, layer, head)
        ablated = output_log_probs(capture(other, char_tokenizer, "hello", target="abc"), tiny.config.eos_id).sum()
        assert found.drop[kind][layer, head] == pytest.approx(plain - ablated, abs=1e-4)
    assert done and done[-1] == (22, 22)  # 1 plain row + 21 heads, reported as the batched passes finish
    assert [d for d, _ in done] == sorted(d for d, _ in done)
    ranked = found.ranked()
    assert len(ranked) == 21 and [r[3] for r in ranked] == sorted((r[3] for r in ranked), reverse=True)
    assert np.abs(found.drop["cross"]).max() > 1e-4  # heads of a random model matter somewhat


def test_decoding_with_a_head_off_is_decoding_the_model_without_it(tiny, char_tokenizer):
    changes = Interventions.make([("cross", 1, 2), ("decoder_self", 0, 0)])
    trace = decode(tiny, char_tokenizer, "hello", changes, top_k=4, prefix=())
    other = without_head(without_head(tiny, "cross", 1, 2), "decoder_self", 0, 0)
    reference = greedy_decode(other, char_tokenizer, "hello", top_k=4)
    assert trace.output_ids == reference.output_ids and trace.text == reference.text
    assert trace.stop_reason == reference.stop_reason and len(trace.steps) > 1
    for mine, theirs in zip(trace.steps, reference.steps):
        assert mine.prob == pytest.approx(theirs.prob, abs=1e-5)
        assert list(mine.top_ids) == list(theirs.top_ids) and mine.top_tokens == theirs.top_tokens
        np.testing.assert_allclose(mine.cross, theirs.cross, atol=1e-5)
        np.testing.assert_allclose(mine.decoder_self, theirs.decoder_self, atol=1e-5)
    assert trace.output_ids != greedy_decode(tiny, char_tokenizer, "hello").output_ids  # the heads mattered


def test_decoding_without_positions_and_from_a_forced_prefix(tiny, char_tokenizer):
    changes = Interventions.make(positional="off")
    trace = decode(tiny, char_tokenizer, "hello", changes, top_k=3, prefix=(5, 6))
    reference = greedy_decode(without_positions(tiny), char_tokenizer, "hello", top_k=3, prefix=(5, 6))
    assert trace.output_ids == reference.output_ids and trace.output_ids[:2] == [5, 6]
    assert [s.forced for s in trace.steps[:3]] == [True, True, False]
    assert [s.prob for s in trace.steps] == pytest.approx([s.prob for s in reference.steps], abs=1e-5)
    with pytest.raises(ValueError, match="max_len"):
        decode(tiny, char_tokenizer, "hello", Interventions.make(positional="shifted", shift=10**5), 3, ())
    room = max_shift(tiny, char_tokenizer, "hello")
    assert room > 0 and decode(
        tiny, char_tokenizer, "hello", Interventions.make(positional="shifted", shift=room), 3, ()
    )


def test_exact_match_under_an_intervention():
    from model import load_checkpoint
    from model.checkpoints.demos import CHECKPOINTS
    from tasks.evaluate import exact_match

    if not (CHECKPOINTS / "reverse").is_dir():
        pytest.skip("checkpoints/reverse is not there")
    model, tokenizer = load_checkpoint(CHECKPOINTS / "reverse")
    examples = fresh_examples({"task": "reverse", "seed": 0, "recipe": {"train_size": 1000}}, 40)
    plain = exact_match_with(model, tokenizer, examples)
    assert plain.exact_match == exact_match(model, tokenizer, examples) and plain.exact_match >= 0.9
    off = exact_match_with(model, tokenizer, examples, Interventions.make(positional="off"))
    reference = without_positions(model)
    assert off.exact_match == exact_match(reference, tokenizer, examples) < plain.exact_match
    assert off.examples == 40 and off.interventions == {"positional": "off"}
    source, target, output = off.failure
    assert target == source[::-1] and output == greedy_decode(reference, tokenizer, source).text != target


def test_fresh_examples_were_not_trained_on():
    card = {"task": "reverse", "seed": 3, "recipe": {"train_size": 300}}
    fresh = fresh_examples(card, 50)
    trained = {e.source for e in dataset(get_task("reverse"), 300, 3)}
    assert len(fresh) == 50 and not {e.source for e in fresh} & trained
    assert all(e.target == e.source[::-1] for e in fresh)
    assert [e.source for e in fresh_examples(card, 50)] == [e.source for e in fresh]  # the same every time
    with pytest.raises(UnknownTraining, match="card"):
        fresh_examples({"task": "no such task", "seed": 0, "recipe": {"train_size": 1}})
    with pytest.raises(UnknownTraining, match="card"):
        fresh_examples({"task": "reverse"})


def test_cosine_similarity_of_positional_rows():
    table = np.array([[3.0, 4.0], [0.0, 2.0], [0.0, 0.0], [-6.0, -8.0]])
    sim = cosine_similarity(table)
    assert sim.shape == (4, 4) and np.allclose(sim, sim.T)
    assert sim[0, 0] == pytest.approx(1) and sim[0, 3] == pytest.approx(-1) and sim[0, 1] == pytest.approx(0.8)
    assert (sim[2] == 0).all()  # a zero row is similar to nothing
