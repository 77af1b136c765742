import numpy as np
import pytest
import torch

from model import greedy_decode
from tests.conftest import make_tiny


def test_cached_and_uncached_decoding_agree(char_tokenizer):
    model = make_tiny(char_tokenizer, seed=5)
    a = greedy_decode(model, char_tokenizer, "the quick fox", max_len=20, use_cache=True, stop_at_eos=False)
    b = greedy_decode(model, char_tokenizer, "the quick fox", max_len=20, use_cache=False, stop_at_eos=False)
    assert len(a.steps) == 20
    assert a.output_ids == b.output_ids
    for sa, sb in zip(a.steps, b.steps):
        np.testing.assert_allclose(sa.decoder_self, sb.decoder_self, atol=1e-6)
        np.testing.assert_allclose(sa.cross, sb.cross, atol=1e-6)
        np.testing.assert_allclose(sa.top_probs, sb.top_probs, atol=1e-6)


def test_step_fields_have_documented_shapes(tiny, char_tokenizer):
    trace = greedy_decode(tiny, char_tokenizer, "abc", max_len=6, top_k=4, stop_at_eos=False)
    S = 4
    for t, step in enumerate(trace.steps):
        assert step.index == t
        assert step.decoder_self.shape == (2, 3, t + 1)
        assert step.cross.shape == (2, 3, S)
        np.testing.assert_allclose(step.decoder_self.sum(-1), 1, atol=1e-5)
        assert step.top_ids.shape == step.top_probs.shape == (4,)
        assert list(step.top_probs) == sorted(step.top_probs, reverse=True)
        assert step.token_id == step.top_ids[0] and step.prob == pytest.approx(step.top_probs[0])
        assert step.top_tokens[0] == step.token
    assert trace.cross_alignment().shape == (2, 3, 6, S)
    assert trace.decoder_self_matrix().shape == (2, 3, 6, 6)
    assert trace.decoder_inputs(2) == ["<s>"] + trace.output_tokens[:2]


def test_stops_at_end_of_sequence(char_tokenizer):
    model = make_tiny(char_tokenizer)
    with torch.no_grad():
        model.generator.bias[2] = 100.0  # </s> always wins
    trace = greedy_decode(model, char_tokenizer, "hello")
    assert trace.output_tokens == ["</s>"] and trace.stop_reason == "eos" and trace.text == ""


def test_max_len_bounds_the_output(tiny, char_tokenizer):
    with torch.no_grad():
        tiny.generator.bias[2] = -100.0  # never </s>
    trace = greedy_decode(tiny, char_tokenizer, "hello", max_len=7)
    assert len(trace.steps) == 7 and trace.stop_reason == "max_len"


def test_forced_prefix_then_greedy_continues(tiny, char_tokenizer):
    free = greedy_decode(tiny, char_tokenizer, "hello", max_len=8, stop_at_eos=False)
    pick = int(free.steps[0].top_ids[2])  # the third candidate at step 0
    forced = greedy_decode(tiny, char_tokenizer, "hello", max_len=8, prefix=[pick], stop_at_eos=False)
    assert forced.steps[0].forced and forced.steps[0].token_id == pick
    assert forced.steps[0].prob == pytest.approx(float(free.steps[0].top_probs[2]), rel=1e-5)
    assert not any(s.forced for s in forced.steps[1:])
    # the continuation is what greedy decoding does after that choice: check step 1 by hand
    with torch.no_grad():
        memory, mask = tiny.encode(torch.tensor([free.source_ids]))
        logits = tiny.decode(torch.tensor([[1, pick]]), memory, mask)
    assert forced.steps[1].token_id == int(logits[0, -1].argmax())
    with pytest.raises(ValueError, match="outside the target vocabulary"):
        greedy_decode(tiny, char_tokenizer, "hello", prefix=[999])


def test_decoder_inputs_start_with_the_vocabularys_start_token(tiny):
    from model import Tokenizer
    from model.text.tokenizer import IdVocab

    ids = IdVocab(size=31, pad_id=0, bos_id=1, eos_id=2, unk_id=3)
    trace = greedy_decode(tiny, Tokenizer(ids, ids), "5 6 7", max_len=3, stop_at_eos=False)
    assert trace.source_tokens == ["<id 5>", "<id 6>", "<id 7>", "<id 2>"]
    assert trace.decoder_inputs(2) == ["<id 1>"] + trace.output_tokens[:2]


def test_default_step_limit_is_the_source_plus_50_as_in_the_paper(char_tokenizer):
    """A model that never writes </s> stops after S + 50 tokens (the paper's inference limit), or at max_len - 1."""
    from model.decoding.beam import beam_search

    model = make_tiny(char_tokenizer, seed=2, max_len=128)
    with torch.no_grad():
        model.generator.bias[2] = -1e4  # </s> is impossible
    long = "abcdefghijklmnopqrstuvwxyz" * 3  # 79 tokens: 129 would not fit max_len 128
    for source, expected in (("hello", 6 + 50), (long, 127)):
        trace = greedy_decode(model, char_tokenizer, source)
        assert len(trace.source_ids) == len(source) + 1
        assert len(trace.steps) == expected and trace.stop_reason == "max_len"
    beams = beam_search(model, char_tokenizer, "hello", beam_size=2)
    assert len(beams.steps) == 6 + 50 and len(beams.output_ids) == 6 + 50


def test_a_model_that_never_ends_fits_max_len_in_every_caller(char_tokenizer):
    """One step limit for all four callers: the decoder input <s> + output never passes max_len."""
    from model import capture
    from model.decoding import step_limit
    from tasks.evaluate import evaluate
    from tasks.tasks import Example
    from tasks.train import report

    model = make_tiny(char_tokenizer, seed=2, max_len=20)
    with torch.no_grad():
        model.generator.bias[2] = -1e4  # </s> is impossible
    sources = ["ab", "hello", "abcdefghijklmnopqrstuvwxyz"]  # the last one is cut to max_len
    examples = [Example(s, s, tuple((i, i) for i in range(len(s)))) for s in sources]
    for source in sources:
        trace = greedy_decode(model, char_tokenizer, source)
        n = len(trace.source_ids)
        assert len(trace.steps) == step_limit(model, n) == min(19, n + 50)
        assert trace.stop_reason == "max_len" and "</s>" not in trace.output_tokens
        cap = capture(model, char_tokenizer, source)
        assert cap.target_tokens == ["<s>"] + trace.output_tokens and len(cap.target_tokens) <= 20
    scores = evaluate(model, char_tokenizer, examples)
    assert [len(o) for o in scores.outputs] == [min(19, len(s) + 1 + 50) for s in sources]  # 19 each
    assert scores.outputs == [greedy_decode(model, char_tokenizer, s).output_ids for s in sources]
    assert scores.exact_match == 0.0
    card_fields = report(model, char_tokenizer, examples)
    assert card_fields["held_out_exact_match"] == 0.0 and card_fields["held_out_examples"] == 3
    assert len(card_fields["alignment"]["per_layer"]) == 2
    # an explicit request is bounded by the same limit
    assert len(greedy_decode(model, char_tokenizer, "ab", max_len=500).steps) == 19


# ------------------------------------------------------------------ beam search and sampling


def test_beam_of_one_is_greedy_decoding(char_tokenizer):
    from model import beam_search

    for seed, source in ((3, "hello world"), (1, "abc")):
        model = make_tiny(char_tokenizer, seed=seed)
        greedy = greedy_decode(model, char_tokenizer, source)
        beam = beam_search(model, char_tokenizer, source, beam_size=1)
        assert beam.output_ids == greedy.output_ids and beam.text == greedy.text
        np.testing.assert_allclose(beam.cross_alignment(), greedy.cross_alignment(), atol=1e-6)
        for hyp, step in zip(beam.best_path, greedy.steps):
            np.testing.assert_allclose(hyp.decoder_self, step.decoder_self, atol=1e-6)
    with torch.no_grad():
        model.generator.bias[2] = 100.0  # </s> at once: one finished hypothesis, as greedy
    beam = beam_search(model, char_tokenizer, "abc", beam_size=1)
    assert beam.output_tokens == ["</s>"] and beam.stop_reason == "finished"


def test_beam_steps_keep_prune_and_finish_with_penalised_scores(char_tokenizer):
    from model import beam_search

    model = make_tiny(char_tokenizer, seed=3)
    trace = beam_search(model, char_tokenizer, "hello", beam_size=3, length_penalty=0.6, max_len=6)
    assert len(trace.steps) == 6 and trace.stop_reason == "max_len"
    for t, step in enumerate(trace.steps):
        assert len(step.live) + len(step.finished) + len(step.pruned) == 6  # the 2K best extensions
        assert len(step.live) == 3
        for hyp in step.live + step.finished + step.pruned:
            assert len(hyp.output_ids) == t + 1 and hyp.cross.shape == (2, 3, 6)
            assert hyp.score == pytest.approx(hyp.log_prob / ((5 + t + 1) / 6) ** 0.6)
        assert [h.log_prob for h in step.live] == sorted((h.log_prob for h in step.live), reverse=True)
        if t:  # each live hypothesis extends a live one of the step before
            parents = trace.steps[t - 1].live
            assert all(h.output_ids[:-1] == parents[h.parent].output_ids for h in step.live)
    # the best hypothesis's log-probability is the sum of its tokens' log-probabilities under the model
    with torch.no_grad():
        memory, mask = model.encode(torch.tensor([trace.source_ids]))
        logp = model.decode(torch.tensor([[1] + trace.output_ids[:-1]]), memory, mask).log_softmax(-1)[0]
    expected = float(logp[torch.arange(len(trace.output_ids)), torch.tensor(trace.output_ids)].sum())
    assert trace.best.log_prob == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("name", ["reverse", "translate"])
def test_beam_never_scores_below_greedy_on_shipped_demos(name):
    """25 held-out inputs of each of two demos (50 in all); on the first 3, beam size 1 is greedy, attention too."""
    from pathlib import Path

    from model import beam_search, load_checkpoint
    from model.decoding.beam import length_penalty_score
    from tasks.registry import get_task
    from tasks.tasks import held_out

    model, tokenizer = load_checkpoint(Path(__file__).resolve().parents[1] / "checkpoints" / name)
    for i, example in enumerate(held_out(get_task(name), 25, seed=11, exclude=set())):
        greedy = greedy_decode(model, tokenizer, example.source)
        greedy_log_prob = sum(float(np.log(s.prob)) for s in greedy.steps)
        greedy_score = length_penalty_score(greedy_log_prob, len(greedy.steps), 0.6)
        beam = beam_search(model, tokenizer, example.source, beam_size=4, length_penalty=0.6)
        assert beam.score >= greedy_score - 1e-4, (example.source, beam.text, greedy.text)
        if i < 3:
            one = beam_search(model, tokenizer, example.source, beam_size=1, length_penalty=0.6)
            assert one.output_ids == greedy.output_ids and one.score == pytest.approx(greedy_score, abs=1e-4)
            np.testing.assert_allclose(one.cross_alignment(), greedy.cross_alignment(), atol=1e-5)


def test_sampling_is_reproducible_and_cools_to_greedy(char_tokenizer):
    from model import sample

    model = make_tiny(char_tokenizer, seed=3)
    a, b = sample(model, char_tokenizer, "hello", seed=1), sample(model, char_tokenizer, "hello", seed=1)
    assert a.output_ids == b.output_ids
    assert any(sample(model, char_tokenizer, "hello", seed=s).output_ids != a.output_ids for s in range(2, 6))
    greedy = greedy_decode(model, char_tokenizer, "hello")
    for temperature in (0.0, 1e-4):
        cold = sample(model, char_tokenizer, "hello", temperature=temperature, seed=7)
        assert cold.output_ids == greedy.output_ids
        np.testing.assert_allclose(cold.cross_alignment(), greedy.cross_alignment(), atol=1e-6)


def test_sampling_draws_only_from_the_kept_tokens(char_tokenizer):
    from model import sample
    from model.decoding import sampling_distribution

    logits = torch.tensor([[2.0, 1.0, 0.5, 0.0, -1.0]])
    top2 = sampling_distribution(logits, 1.0, top_k=2)
    assert (top2[0, 2:] == 0).all() and float(top2.sum()) == pytest.approx(1.0)
    full = logits.softmax(-1)[0]
    nucleus = sampling_distribution(logits, 1.0, top_p=float(full[0] + full[1]) - 1e-3)
    assert (nucleus[0, :2] > 0).all() and (nucleus[0, 2:] == 0).all()
    model = make_tiny(char_tokenizer, seed=3)
    trace = sample(model, char_tokenizer, "hello", top_k=3, seed=0, max_len=10, shown=5)
    for step in trace.steps:  # only the three most probable tokens carry probability, and one was drawn
        assert (step.top_probs[3:] == 0).all() and step.token_id in step.top_ids[:3]


def test_each_sampled_step_reports_the_distribution_it_was_drawn_from(char_tokenizer):
    """prob and top_probs are the model's distribution after temperature and the nucleus cut, checked by hand."""
    from model import sample

    model = make_tiny(char_tokenizer, seed=4)
    trace = sample(model, char_tokenizer, "hello", temperature=0.7, top_p=0.5, seed=3, max_len=6, shown=4)
    with torch.no_grad():
        memory, mask = model.encode(torch.tensor([trace.source_ids]))
        logits = model.decode(torch.tensor([[1] + trace.output_ids[:-1]]), memory, mask)[0]  # (T, V)
    for t, step in enumerate(trace.steps):
        probs = (logits[t] / 0.7).softmax(-1)
        order = probs.argsort(descending=True)
        mass = probs[order].cumsum(0) - probs[order]
        kept = order[mass < 0.5]  # the nucleus: tokens whose more probable neighbours hold < top_p
        expected = torch.zeros_like(probs)
        expected[kept] = probs[kept] / probs[kept].sum()
        assert step.token_id in kept.tolist()
        assert step.prob == pytest.approx(float(expected[step.token_id]), abs=1e-5)
        np.testing.assert_allclose(step.top_probs, expected.sort(descending=True).values[:4].numpy(), atol=1e-5)


def test_sampling_a_demo_model_reproduces_its_draw_and_cools_to_greedy():
    from pathlib import Path

    from model import load_checkpoint, sample

    model, tokenizer = load_checkpoint(Path(__file__).resolve().parents[1] / "checkpoints" / "translate")
    source = "the red car sees a small dog"
    hot = [sample(model, tokenizer, source, temperature=3.0, seed=5).output_ids for _ in range(2)]
    assert hot[0] == hot[1]
    greedy = greedy_decode(model, tokenizer, source)
    assert sample(model, tokenizer, source, temperature=1e-6, seed=9).output_ids == greedy.output_ids


def test_sampling_cuts_as_hugging_face_does_top_p_after_a_renormalised_top_k():
    """Issue 21: top-p measures the nucleus on the top-k tokens' renormalised probabilities, as Hugging Face's
    TemperatureLogitsWarper -> TopKLogitsWarper -> TopPLogitsWarper do; checked against those warpers themselves."""
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    from model.decoding import sampling_distribution

    logits = torch.randn(64, 50, generator=torch.Generator().manual_seed(0)) * 3
    for temperature, top_k, top_p in [(1.0, 5, 0.8), (0.7, 10, 0.5), (1.3, 3, 0.9), (1.0, 0, 0.6), (1.0, 8, 1.0)]:
        scores = TemperatureLogitsWarper(temperature)(None, logits.clone())
        if top_k:
            scores = TopKLogitsWarper(top_k)(None, scores)
        if top_p < 1.0:
            scores = TopPLogitsWarper(top_p)(None, scores)
        expected = scores.softmax(-1)
        got = sampling_distribution(logits, temperature, top_k=top_k, top_p=top_p)
        assert torch.equal(got > 0, expected > 0), (temperature, top_k, top_p)  # the same tokens kept
        torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-5)
    # the case that differs from cutting the full distribution: top-k keeps 2 tokens of 0.4 and 0.2 (of the full
    # softmax); renormalised they are 2/3 and 1/3, so top-p 0.6 keeps the first alone (0.6 of the full mass would
    # have kept both)
    probs = torch.tensor([[0.4, 0.2, 0.15, 0.15, 0.1]])
    cut = sampling_distribution(probs.log(), 1.0, top_k=2, top_p=0.6)
    assert cut[0].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
