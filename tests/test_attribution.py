"""model.attribute (issue 26) against independent computations: hand-made products and flows, autograd, forward passes."""

from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
import torch

from model import attribute, load_checkpoint
from model.analysis import attribution_graph as graph
from model.analysis.attribution_agreement import gold_share, mean_spearman, ranks, spearman
from model.interventions import Interventions
from tasks.intervened import fresh_examples
from tests.conftest import make_tiny

REVERSE = Path(__file__).resolve().parents[1] / "checkpoints" / "reverse"


@lru_cache(maxsize=1)
def reverse():
    return load_checkpoint(str(REVERSE))


def stochastic(rows):
    m = np.asarray(rows, dtype=np.float64)
    return m / m.sum(-1, keepdims=True)


def test_rollout_is_the_matrix_product_by_hand():
    # 2 encoder layers, 2 decoder layers, 2 heads, S = 2 source and T = 2 decoder positions
    e1 = np.stack([stochastic([[3, 1], [1, 1]]), stochastic([[1, 0], [1, 3]])])
    e2 = np.stack([stochastic([[1, 1], [0, 1]]), stochastic([[2, 1], [1, 2]])])
    d1 = np.stack([stochastic([[1, 0], [1, 1]]), stochastic([[1, 0], [1, 2]])])
    d2 = np.stack([stochastic([[1, 0], [2, 1]]), stochastic([[1, 0], [1, 1]])])
    x1 = np.stack([stochastic([[1, 3], [1, 1]]), stochastic([[2, 1], [1, 4]])])
    x2 = np.stack([stochastic([[1, 1], [3, 1]]), stochastic([[1, 2], [1, 2]])])
    got = graph.rollout(np.stack([e1, e2]), np.stack([d1, d2]), np.stack([x1, x2]))
    eye = np.eye(2)
    hat = [0.5 * eye + 0.5 * (m[0] + m[1]) / 2 for m in (e1, e2, d1, d2)]
    r_ss = hat[1] @ hat[0]
    r1 = 0.5 * (hat[2] @ np.zeros((2, 2))) + 0.5 * ((x1[0] + x1[1]) / 2) @ r_ss
    r2 = 0.5 * (hat[3] @ r1) + 0.5 * ((x2[0] + x2[1]) / 2) @ r_ss
    np.testing.assert_allclose(got, r2 / r2.sum(1, keepdims=True), atol=1e-12)
    # a cross layer with every head off brings in nothing: only the other layer's cross-attention counts
    keep = {"encoder_self": np.ones((2, 2), bool), "decoder_self": np.ones((2, 2), bool),
            "cross": np.array([[True, True], [False, False]])}  # fmt: skip
    only_first = hat[3] @ r1
    np.testing.assert_allclose(
        graph.rollout(np.stack([e1, e2]), np.stack([d1, d2]), np.stack([x1, x2]), keep),
        only_first / only_first.sum(1, keepdims=True),
        atol=1e-12,
    )


def test_flow_equals_the_max_flow_solved_by_hand():
    # encoder Â = [[.9, .1], [.2, .8]], one decoder position, cross edges 0.5 * [.3, .7] = [.15, .35]
    # to source 0: min(.15, .9) + min(.35, .2) = .35;  to source 1: min(.15, .1) + min(.35, .8) = .45
    enc = np.array([[[[0.8, 0.2], [0.4, 0.6]]]])
    dec = np.array([[[[1.0]]]])
    cross = np.array([[[[0.3, 0.7]]]])
    np.testing.assert_allclose(graph.flow(enc, dec, cross), [[0.35 / 0.8, 0.45 / 0.8]], atol=1e-9)
    # rollout on the same graph sums the paths instead: .15 * .9 + .35 * .2 and .15 * .1 + .35 * .8
    np.testing.assert_allclose(graph.rollout(enc, dec, cross), [[0.205 / 0.5, 0.295 / 0.5]], atol=1e-12)


def test_occlusion_is_two_forward_passes(char_tokenizer):
    model = make_tiny(char_tokenizer, seed=3)
    got = attribute(model, char_tokenizer, "hello", target="olleh", method="occlusion", replacement="unk")
    src = char_tokenizer.source.encode("hello") + [2]
    tgt = [1] + char_tokenizer.target.encode("olleh")
    scored = tgt[1:] + [2]
    assert got.scores.shape == (6, 6) and got.settings == {"replacement": "<unk>"}

    def logp(source_ids):
        with torch.no_grad():
            out = model(torch.tensor([source_ids]), torch.tensor([tgt]))[0].double().log_softmax(-1)
        return np.array([float(out[t, i]) for t, i in enumerate(scored)])

    plain = logp(src)
    for s in range(len(src)):
        changed = list(src)
        changed[s] = char_tokenizer.source.unk_id
        np.testing.assert_allclose(got.scores[:, s], plain - logp(changed), atol=1e-5)
    np.testing.assert_allclose(got.log_probs, plain, atol=1e-5)


def _direct(model, tokenizer, source, target):
    """x (S, D), log p of output row t as a function of x, and the decoder's rows, without Captum and without the
    project's gradient helper: a forward hook puts x in place of the source embedding table's output, and the model
    runs from ids as capture runs it (so positions, scales and norms are the model's own)."""
    src = torch.tensor([tokenizer.source.encode(source) + [2]])
    tgt = [1] + tokenizer.target.encode(target)
    gold = torch.tensor(tgt[1:] + [2])

    def f(xs, rows):
        handle = model.src_embed.register_forward_hook(lambda module, args, out: xs)
        try:
            memory, mask = model.encode(src.expand(len(xs), -1))
        finally:
            handle.remove()
        logp = model.decode(torch.tensor([tgt]).expand(len(xs), -1), memory, mask).log_softmax(-1)
        return logp[torch.arange(len(xs)), rows, gold[rows]]

    return model.src_embed(src).detach()[0], f, len(tgt)


def test_grad_x_input_is_its_definition(char_tokenizer):
    model = make_tiny(char_tokenizer, seed=4)
    got = attribute(model, char_tokenizer, "abcd", target="dcba", method="grad_x_input")
    x, f, T = _direct(model, char_tokenizer, "abcd", "dcba")
    for t in range(T):
        xt = x.clone().requires_grad_()
        (grad,) = torch.autograd.grad(f(xt[None], torch.tensor([t]))[0], xt)
        np.testing.assert_allclose(got.scores[t], (xt * grad).norm(dim=-1).detach().numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("baseline", ["zero", "pad"])
def test_integrated_gradients_is_its_definition(char_tokenizer, baseline):
    model = make_tiny(char_tokenizer, seed=6)
    got = attribute(
        model, char_tokenizer, "abc", target="cba", method="integrated_gradients", baseline=baseline, steps=512
    )
    x, f, T = _direct(model, char_tokenizer, "abc", "cba")
    base = torch.zeros_like(x) if baseline == "zero" else model.src_embed.weight[0].detach().expand_as(x)
    n = 4000  # the midpoint rule, written out (Captum: Gauss-Legendre; both converge on the same integral)
    alphas = (torch.arange(n, dtype=torch.float32) + 0.5) / n
    for t in range(T):
        path = (base + alphas[:, None, None] * (x - base)).requires_grad_()  # (n, S, D)
        (grads,) = torch.autograd.grad(f(path, torch.full((n,), t)).sum(), path)
        expected = ((x - base) * grads.mean(0)).sum(-1).double().numpy()
        np.testing.assert_allclose(got.scores[t], expected, rtol=5e-3, atol=1e-3)  # quadrature apart
    assert got.settings == {"baseline": baseline, "steps": 512}


def test_integrated_gradients_completeness_on_the_reverse_demo():
    model, tok = reverse()
    for text in ("abcdefghij", "stressed"):
        got = attribute(model, tok, text, method="integrated_gradients")
        change = got.expected_sums
        assert np.abs(change).max() > 0.5  # the baseline does change the output
        missed = np.abs(got.row_sums() - change)
        assert np.all(missed <= 0.01 * np.abs(change) + 1e-4), (text, missed / np.abs(change))


def test_reverse_demo_methods_point_at_the_mirrored_letter():
    model, tok = reverse()
    card = __import__("json").loads((REVERSE / "card.json").read_text())
    examples = [e for e in fresh_examples(card, 60) if len(e.source) <= 7][:4]
    assert len(examples) == 4
    for method in ("occlusion", "grad_x_input", "integrated_gradients"):
        hits = total = 0
        for ex in examples:
            got = attribute(model, tok, ex.source, method=method)
            n = len(ex.source)
            for t in range(min(n, len(got.output_tokens))):
                if got.output_tokens[t] != "</s>":
                    hits += int(np.argmax(got.scores[t])) == n - 1 - t
                    total += 1
        assert total >= 16 and hits / total >= 0.85, (method, hits, total)


def test_interventions_reach_every_pass(char_tokenizer):
    model = make_tiny(char_tokenizer, seed=7)
    off = Interventions.make([("cross", 0, 0), ("encoder_self", 1, 2)])
    plain = attribute(model, char_tokenizer, "abcab", target="bacba", method="occlusion")
    changed = attribute(model, char_tokenizer, "abcab", target="bacba", method="occlusion", interventions=off)
    assert changed.interventions == off.describe()
    assert not np.allclose(plain.scores, changed.scores)
    with pytest.raises(ValueError, match="method"):
        attribute(model, char_tokenizer, "abc", method="saliency")
    with pytest.raises(ValueError, match="steps"):
        attribute(model, char_tokenizer, "abc", method="integrated_gradients", steps=0)


def test_spearman_and_gold_share_by_hand():
    np.testing.assert_allclose(ranks([3.0, 1.0, 3.0, 2.0]), [2.5, 0, 2.5, 1])
    # ranks (0, 1, 2) against (0, 2, 1): 1 - 6 * 2 / (3 * 8) = 0.5
    assert spearman([1, 2, 3], [5, 9, 7]) == pytest.approx(0.5)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]))
    assert mean_spearman(np.array([[1, 2, 3], [1, 2, 3]]), np.array([[5, 9, 7], [3, 2, 1]])) == pytest.approx(-0.25)
    scores = np.array([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1], [0.2, 0.2, 0.6]])
    assert gold_share(scores, [(1, 0), (2, 1), (2, 2)]) == pytest.approx(2 / 3)
    assert np.isnan(gold_share(scores, []))
