"""Decoder-only and encoder-only Hugging Face folders (GPT-2, Llama with and without grouped-query attention,
Qwen2, BERT with and without its masked-LM head) against transformers itself: the same token ids from the same
tokenizer files, log-probabilities and every attention map of every query head within 1e-4, and greedy
continuations equal to generate(do_sample=False). Tiny random models and tokenizers are built in the test
(tests/hf_one_stack.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.analysis import inside
from model.analysis.capture import capture
from model.checkpoints.loading import load_checkpoint
from model.decoding.greedy import greedy_decode
from tests.hf_one_stack import BUILDERS, TEXTS
from tests.import_helpers import assert_loaded_without_copies

DECODERS = ("gpt2", "gpt2-crfm", "llama", "llama-gqa", "qwen2")
ENCODERS = ("bert", "bert-mlm")


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    root = tmp_path_factory.mktemp("one_stack")
    out = {}
    for name, build in BUILDERS.items():
        family = build(root)
        model, tok = load_checkpoint(family.folder)
        out[name] = (family, model, tok)
    return out


def reference_ids(family, text: str) -> list[int]:
    """The token ids transformers' (or sentencepiece's, for tokenizer.model) tokenizer gives the text."""
    if family.name == "llama-gqa":  # LlamaTokenizer: BOS, then sentencepiece's pieces (add_bos_token true)
        return [family.start] + family.tokenizer.encode(text)
    return family.tokenizer(text)["input_ids"]


def ours_and_theirs(family, model, tok, text: str):
    """(transformers' token ids, our capture, transformers' output with attentions, its maps stacked (L, H, Q, K))."""
    ids = reference_ids(family, text)
    cap = capture(model, tok, text)
    with torch.no_grad():
        out = family.hf(torch.tensor([ids]), output_attentions=True)
    return ids, cap, out, torch.stack([a[0] for a in out.attentions]).numpy()


@pytest.mark.parametrize("name", DECODERS)
def test_decoder_only_log_probs_and_every_attention_map_match_transformers(families, name):
    family, model, tok = families[name]
    assert model.config.shape == "decoder-only" and model.encoder.layers.__len__() == 0
    for text in TEXTS:
        ids, cap, out, maps = ours_and_theirs(family, model, tok, text)  # maps: (L, H, T, T) per query head
        assert cap.target_ids.tolist() == ids
        want = out.logits[0].log_softmax(-1).numpy()
        assert cap.log_probs.shape == want.shape
        np.testing.assert_allclose(cap.log_probs, want, atol=1e-4)
        assert cap.decoder_self.shape == maps.shape
        np.testing.assert_allclose(cap.decoder_self, maps, atol=1e-4)
        assert cap.encoder_self.size == 0 and cap.cross.size == 0 and cap.source_tokens == []


@pytest.mark.parametrize("name", DECODERS)
def test_greedy_continuation_equals_generate(families, name):
    family, model, tok = families[name]
    text = TEXTS[0]
    ids = reference_ids(family, text)
    with torch.no_grad():
        out = family.hf.generate(
            torch.tensor([ids]), max_new_tokens=8, do_sample=False, pad_token_id=model.config.eos_id
        )
    want = out[0, len(ids) :].tolist()
    trace = greedy_decode(model, tok, text, max_new_tokens=8)
    assert trace.output_ids == want
    cached = greedy_decode(model, tok, text, max_new_tokens=8, use_cache=False)
    assert cached.output_ids == want


def test_grouped_query_attention_is_read_from_the_config(families):
    """Llama with 2 key/value heads for 4 query heads, Qwen2 with 2 for 6: the config says which one each reads,
    and the maps of a group differ (their queries do) while their recorded keys are the same."""
    for name, heads, kv in (("llama-gqa", 4, 2), ("qwen2", 6, 2)):
        family, model, tok = families[name]
        c = model.config
        assert (c.n_heads, c.kv_heads) == (heads, kv)
        assert [c.kv_head_of(h) for h in range(heads)] == [h // (heads // kv) for h in range(heads)]
        cap = capture(model, tok, TEXTS[1], qkv=True)
        q, k, v = cap.qkv["decoder_self"]
        assert np.array_equal(k[:, 0], k[:, 1]) and not np.array_equal(k[:, 0], k[:, heads - 1])
        assert not np.allclose(cap.decoder_self[:, 0], cap.decoder_self[:, 1])
    assert families["llama"][1].config.kv_heads == 4


def test_qwen2_has_biases_on_q_k_v_only(families):
    _, model, _ = families["qwen2"]
    attn = model.decoder.layers[0].self_attn
    assert attn.q_proj.bias is not None and attn.k_proj.bias is not None and attn.v_proj.bias is not None
    assert attn.out_proj.bias is None and model.decoder.layers[0].ff.linear1.bias is None


@torch.no_grad()
def test_stanford_crfms_gpt2_divides_each_layers_scores_by_its_number(families):
    """scale_attn_by_inverse_layer_idx: layer i's q.k / sqrt(d_head) also divided by i + 1, recomputed here from the
    captured q and k; the Inside page's steps of a head (head_settings) give the same row."""
    family, model, tok = families["gpt2-crfm"]
    config = model.config
    assert config.scale_by_layer and config.scale_scores
    cap = capture(model, tok, TEXTS[1], qkv=True)
    T = cap.decoder_self.shape[-1]
    for layer in range(config.n_decoder_layers):
        q, k, _v = (a[layer, 1].astype(np.float64) for a in cap.qkv["decoder_self"])
        scores = q @ k.T / np.sqrt(config.d_head) / (layer + 1)
        scores[np.triu(np.ones((T, T), dtype=bool), 1)] = -np.inf
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        np.testing.assert_allclose(cap.decoder_self[layer, 1], weights / weights.sum(-1, keepdims=True), atol=1e-5)
        step = inside.step_from_capture(
            cap, "decoder_self", layer, 1, T - 1, **inside.head_settings(config, "decoder_self", layer)
        )
        np.testing.assert_allclose(step.weights, cap.decoder_self[layer, 1, T - 1], atol=1e-5)


@pytest.mark.parametrize("name", ENCODERS)
def test_bert_every_attention_map_and_the_masked_lm_match_transformers(families, name):
    family, model, tok = families[name]
    assert model.config.shape == "encoder-only" and len(model.decoder.layers) == 0
    for text in TEXTS:
        ids, cap, out, maps = ours_and_theirs(family, model, tok, text)  # maps: (L, H, S, S)
        assert cap.source_ids.tolist() == ids
        np.testing.assert_allclose(cap.encoder_self, maps, atol=1e-4)
        assert cap.decoder_self.size == 0 and cap.target_tokens == []
        if name == "bert-mlm":
            np.testing.assert_allclose(cap.log_probs, out.logits[0].log_softmax(-1).numpy(), atol=1e-4)
        else:
            assert cap.log_probs is None


@pytest.mark.parametrize("name", [*DECODERS, *ENCODERS])
def test_the_weights_are_loaded_without_copies(families, name, monkeypatch):
    """No tensor is copied while loading (GPT-2's transposed Conv1D weights and split c_attn included): views of the file's mapping by default, views of one
    buffer read from it with VIZ_MAP_WEIGHTS=0 (tests/import_helpers.assert_loaded_without_copies)."""
    assert_loaded_without_copies(families[name][0].folder, monkeypatch)


# -- attribution (issue 32): every method over the prompt, against transformers' own forward ---------------------

PROMPT, CONTINUATION = "the cat sat", " on a mat"


def _hf_case(family, tok, prompt: str, continuation: str | None):
    """transformers' ids of the prompt and of the prompt + continuation (the continuation's own ids appended), the
    scored ids (the continuation then </s>) and the positions that write them."""
    p = reference_ids(family, prompt)
    if continuation is None:  # an encoder: every position scored with the head's own top prediction
        with torch.no_grad():
            top = family.hf(torch.tensor([p])).logits[0].argmax(-1)
        return p, p, top.tolist(), list(range(len(p)))
    lead = reference_ids(family, "")  # what the tokenizer puts before any text (a BOS): once, before the prompt
    rest = reference_ids(family, continuation)[len(lead) :]
    scored = rest + [tok.target.eos_id]
    return p, p + rest, scored, [len(p) - 1 + t for t in range(len(scored))]


@pytest.mark.parametrize("name, target", [("gpt2", CONTINUATION), ("llama-gqa", CONTINUATION), ("bert-mlm", None)])
def test_gradient_x_input_and_integrated_gradients_match_transformers(families, name, target):
    """Gradient x input (‖x ⊙ ∂ log p / ∂x‖ per prompt token) and integrated gradients (Gauss-Legendre on the straight
    path from the <pad> embeddings, written here) of each scored token, computed by torch autograd through
    transformers' own model from inputs_embeds; IG's rows sum to log p(x) - log p(baseline) (completeness)."""
    from model import attribute

    family, model, tok = families[name]
    model, hf = model.double(), family.hf.double()
    try:
        p, ids, scored, at = _hf_case(family, tok, PROMPT, target)
        gx = attribute(model, tok, PROMPT, target, method="grad_x_input")
        ig = attribute(model, tok, PROMPT, target, method="integrated_gradients", baseline="pad", steps=32)
        assert gx.source_tokens == tok.source.decode(p) and gx.scores.shape == (len(scored), len(p))
        table = hf.get_input_embeddings()
        full = table(torch.tensor([ids])).detach()  # (1, N, D)
        P, T = len(p), len(scored)
        gold, where = torch.tensor(scored), torch.tensor(at)

        def f(x: torch.Tensor) -> torch.Tensor:  # (B, P, D) prompt embeddings -> (B, T) log p of each scored token
            e = torch.cat([x, full[:, P:].expand(len(x), -1, -1)], 1)  # the continuation held fixed
            return hf(inputs_embeds=e).logits.double().log_softmax(-1)[:, where, gold]

        x = full[:, :P].clone().requires_grad_()
        want, out = np.zeros((T, P)), f(x)
        for t in range(T):
            (grad,) = torch.autograd.grad(out[0, t], x, retain_graph=True)
            want[t] = (x * grad)[0].norm(dim=-1).detach().numpy()
        np.testing.assert_allclose(gx.scores, want, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(gx.log_probs, f(x)[0].detach().numpy(), atol=1e-6)

        base = table(torch.full((1, P), tok.source.pad_id)).detach()
        nodes, weights = np.polynomial.legendre.leggauss(64)
        alphas = torch.tensor((nodes + 1) / 2)[:, None, None]
        path = (base + alphas * (x.detach() - base)).requires_grad_()  # (64, P, D)
        ref, out = np.zeros((T, P)), f(path)
        for t in range(T):
            (grad,) = torch.autograd.grad(out[:, t].sum(), path, retain_graph=True)
            mean = (torch.tensor(weights / 2)[:, None, None] * grad).sum(0)  # ∫_0^1 ∂F/∂x dα
            ref[t] = ((x.detach() - base)[0] * mean).sum(-1).numpy()
        with torch.no_grad():
            change = (f(x) - f(base))[0].numpy()
        np.testing.assert_allclose(ig.expected_sums, change, atol=1e-6)  # RMS norms run in float32 (both)
        assert np.all(np.abs(ig.row_sums() - change) <= 0.01 * np.abs(change) + 1e-4)  # completeness
        np.testing.assert_allclose(ig.scores, ref, atol=2e-3 * np.abs(ref).max())
    finally:
        model.float(), hf.float()


@pytest.mark.parametrize("name, target", [("gpt2", CONTINUATION), ("bert-mlm", None)])
def test_occlusion_and_rollout_match_transformers(families, name, target):
    """Occlusion (each prompt token replaced by <unk>, log p dropped), rollout (R = Π (0.5 I + 0.5 Ā_l) over the
    sequence, the rows that write the output restricted to the prompt and renormalised, Abnar & Zuidema's rule) and
    flow (the maximum flow through the same graph) from transformers' own log-probs and attention maps."""
    from model import attribute

    family, model, tok = families[name]
    p, ids, scored, at = _hf_case(family, tok, PROMPT, target)
    occ = attribute(model, tok, PROMPT, target, method="occlusion", replacement="unk")
    roll = attribute(model, tok, PROMPT, target, method="rollout")
    P = len(p)
    with torch.no_grad():
        out = family.hf(torch.tensor([ids]), output_attentions=True)
        logp = out.logits[0].double().log_softmax(-1)[at, scored].numpy()
        want = np.zeros((len(scored), P))
        for s in range(P):
            hidden = list(ids)
            hidden[s] = tok.source.unk_id
            changed = family.hf(torch.tensor([hidden])).logits[0].double().log_softmax(-1)[at, scored].numpy()
            want[:, s] = logp - changed
    np.testing.assert_allclose(occ.scores, want, atol=2e-4)
    r = np.eye(len(ids))
    for a in out.attentions:
        r = (0.5 * np.eye(len(ids)) + 0.5 * a[0].double().mean(0).numpy()) @ r
    rows = r[at][:, :P]
    np.testing.assert_allclose(roll.scores, rows / rows.sum(1, keepdims=True), atol=1e-5)
    # flow: the maximum flow through the same layered graph (capacities 0.5 I + 0.5 Ā), networkx on transformers' maps
    import networkx as nx

    flow = attribute(model, tok, PROMPT, target, method="flow")
    g = nx.DiGraph()
    for layer, a in enumerate(out.attentions, start=1):
        cap = 0.5 * np.eye(len(ids)) + 0.5 * a[0].double().mean(0).numpy()
        for i, j in zip(*np.nonzero(cap > 1e-12)):
            g.add_edge((layer, int(i)), (layer - 1, int(j)), capacity=float(cap[i, j]))
    top = len(out.attentions)
    want = np.array([[nx.maximum_flow_value(g, (top, q), (0, k)) for k in range(P)] for q in at])
    np.testing.assert_allclose(flow.scores, want / want.sum(1, keepdims=True), atol=1e-5)


def test_occlusion_by_the_mask_token_where_the_vocabulary_has_one(families):
    """BERT: occlusion may replace each token by [MASK] (transformers' own tokenizer names its id), equal to
    transformers' log-probs with that token masked; the page offers it (and integrated gradients' mask baseline) only
    for a vocabulary with a mask token: not GPT-2's."""
    from model import attribute
    from model.analysis.attribution_methods.registry import METHODS

    family, model, tok = families["bert-mlm"]
    mask = family.tokenizer.mask_token_id
    p, ids, scored, at = _hf_case(family, tok, PROMPT, None)
    occ = attribute(model, tok, PROMPT, None, method="occlusion", replacement="mask")
    assert occ.settings["replacement"] == family.tokenizer.mask_token
    with torch.no_grad():
        logp = family.hf(torch.tensor([ids])).logits[0].double().log_softmax(-1)[at, scored].numpy()
        want = np.zeros((len(scored), len(p)))
        for s in range(len(p)):
            hidden = list(ids)
            hidden[s] = mask
            changed = family.hf(torch.tensor([hidden])).logits[0].double().log_softmax(-1)[at, scored].numpy()
            want[:, s] = logp - changed
    np.testing.assert_allclose(occ.scores, want, atol=2e-4)
    choices = {c.name: c for module in METHODS.values() for c in module.SETTINGS}
    _, _, gpt2_tok = families["gpt2"]
    for name in ("replacement", "baseline"):
        assert "mask" in choices[name].options_for(tok) and "mask" not in choices[name].options_for(gpt2_tok)
    with pytest.raises(ValueError, match="no mask token"):
        attribute(families["gpt2"][1], gpt2_tok, PROMPT, CONTINUATION, method="occlusion", replacement="mask")
