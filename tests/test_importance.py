"""head_importance: the drop in the output's log-probability when one head alone is switched off."""

import numpy as np
import pytest
import torch

from model import capture
from model.analysis.importance import head_importance
from tests.conftest import make_tiny


def output_log_prob(cap, ended=True) -> float:
    """Total log-probability of a capture's output: its decoder inputs shifted by one, then </s> if it ended."""
    scored = list(cap.target_ids[1:]) + ([2] if ended else [])
    return float(sum(cap.log_probs[t, i] for t, i in enumerate(scored)))


def every_head(model):
    cfg = model.config
    n = {"encoder_self": cfg.n_encoder_layers, "decoder_self": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
    return [(k, i, h) for k, layers in n.items() for i in range(layers) for h in range(cfg.n_heads)]


def test_each_drop_is_the_one_head_capture(char_tokenizer):
    model = make_tiny(char_tokenizer, seed=5)
    imp = head_importance(model, char_tokenizer, "hello world", target="dlrow")
    plain = capture(model, char_tokenizer, "hello world", target="dlrow")
    assert imp.baseline == pytest.approx(output_log_prob(plain), abs=1e-4)
    assert imp.output_tokens == list("dlrow") + ["</s>"] and not imp.generated
    assert {k: v.shape for k, v in imp.drop.items()} == {
        "encoder_self": (3, 3),
        "decoder_self": (2, 3),
        "cross": (2, 3),
    }
    for kind, layer, head in every_head(model):
        cut = capture(model, char_tokenizer, "hello world", target="dlrow", ablate=[(kind, layer, head)])
        assert imp.log_prob[kind][layer, head] == pytest.approx(output_log_prob(cut), abs=1e-4)
        assert imp.drop[kind][layer, head] == pytest.approx(imp.baseline - output_log_prob(cut), abs=1e-4)
    assert len({round(float(d), 4) for d in np.concatenate([d.ravel() for d in imp.drop.values()])}) > 10


def test_a_head_that_writes_nothing_has_no_importance_and_switching_everything_off_hurts(char_tokenizer):
    model = make_tiny(char_tokenizer, seed=6)
    dk = model.config.d_head
    with torch.no_grad():  # head 1 of decoder layer 0's cross-attention: its W^O columns are zero
        model.decoder.layers[0].cross_attn.out_proj.weight[:, dk : 2 * dk] = 0
    imp = head_importance(model, char_tokenizer, "stressed")
    assert imp.generated
    assert abs(imp.drop["cross"][0, 1]) < 1e-5  # float32 rounding of other batch rows
    others = [abs(imp.drop[k][i, h]) for k, i, h in every_head(model) if (k, i, h) != ("cross", 0, 1)]
    assert min(others) > 1e-3  # every other head changes the output's probability
    greedy = capture(model, char_tokenizer, "stressed")
    assert imp.target_tokens == greedy.target_tokens
    ended = imp.output_tokens[-1] == "</s>"
    assert len(imp.output_tokens) == len(imp.target_tokens) - (not ended)
    assert imp.baseline == pytest.approx(output_log_prob(greedy, ended), abs=1e-4)
    everything = capture(model, char_tokenizer, "stressed", ablate=every_head(model))
    assert output_log_prob(everything, ended) < imp.baseline - 1.0
    assert imp.ranked()[0][3] == max(float(d.max()) for d in imp.drop.values())
    assert len(imp.ranked()) == len(every_head(model))


def test_batches_of_any_size_and_a_base_change_give_the_same_numbers(char_tokenizer):
    model = make_tiny(char_tokenizer, seed=7)
    one = head_importance(model, char_tokenizer, "abc def", target="fed cba", batch_size=1)
    many = head_importance(model, char_tokenizer, "abc def", target="fed cba", batch_size=5)
    for kind in one.drop:
        np.testing.assert_allclose(one.drop[kind], many.drop[kind], atol=1e-5)
    # with a head already switched off everywhere: that head's drop is 0, and the baseline is the ablated capture
    base = [("cross", 1, 2)]
    on_top = head_importance(model, char_tokenizer, "abc def", target="fed cba", ablate=base, positional="off")
    cut = capture(model, char_tokenizer, "abc def", target="fed cba", ablate=base, positional="off")
    assert on_top.baseline == pytest.approx(output_log_prob(cut), abs=1e-4)
    assert abs(on_top.drop["cross"][1, 2]) < 1e-5
    assert on_top.interventions == {"ablate": [["cross", 1, 2]], "positional": "off"}
    with pytest.raises(ValueError, match="the model has 2 cross layers"):
        head_importance(model, char_tokenizer, "abc", ablate=[("cross", 5, 0)])
