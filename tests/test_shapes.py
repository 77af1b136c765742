"""The one model in three shapes, as configuration: encoder-decoder (the paper), decoder-only and encoder-only, plus
grouped-query attention, q/k/v-only biases and partial RoPE. References are recomputations written here."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from model.analysis.capture import capture
from model.decoding.greedy import greedy_decode
from model.network.config import TransformerConfig, parameter_count
from model.network.transformer import build_model
from model.text.tokenizer import Tokenizer, Vocab
from tests.i18n_helpers import matching

VOCAB = Vocab.build(list("abcdefgh="), level="char")


def config(shape: str, **kw) -> TransformerConfig:
    layers = {"decoder-only": (0, 2), "encoder-only": (2, 0), "encoder-decoder": (2, 2)}[shape]
    base = dict(src_vocab_size=len(VOCAB), tgt_vocab_size=len(VOCAB), d_model=16, n_heads=4, d_ff=32, max_len=32,
                dropout=0.0, shape=shape, n_encoder_layers=layers[0], n_decoder_layers=layers[1])  # fmt: skip
    return TransformerConfig(**{**base, **kw})


def test_the_missing_stack_must_have_no_layers_and_is_not_built():
    with pytest.raises(ValueError, match="n_encoder_layers must be 0 in a decoder-only model"):
        config("decoder-only", n_encoder_layers=1)
    with pytest.raises(ValueError, match="n_decoder_layers must be 0 in a encoder-only model"):
        config("encoder-only", n_decoder_layers=2)
    with pytest.raises(ValueError, match=matching("n_heads={h} is not a multiple of n_kv_heads={kv}", kv=3)):
        config("decoder-only", n_kv_heads=3)
    dec = build_model(config("decoder-only"), seed=0)
    assert dec.src_pe is None and len(dec.encoder.layers) == 0 and dec.encoder.norm is None
    assert all(layer.cross_attn is None and layer.norm2 is None for layer in dec.decoder.layers)
    assert dec.tgt_embed is dec.src_embed  # one table
    enc = build_model(config("encoder-only", output_head="none"), seed=0)
    assert enc.tgt_pe is None and len(enc.decoder.layers) == 0 and enc.generator is None


@pytest.mark.parametrize(
    "shape,extra",
    [
        ("decoder-only", dict(n_kv_heads=2, positional="rope", pe_layout="half")),
        ("decoder-only", dict(norm="rms", bias=False, qkv_bias=True, ff_gated=True, activation="silu")),
        (
            "decoder-only",
            dict(
                norm="rms_plus_one",
                qk_norm="head",
                block_norms="sandwich",
                sliding_window=3,
                norm_first=True,
                layer_types=["local", "global"],
                positional="rope",
                attn_softcap=5.0,
            ),
        ),  # Gemma 3
        (
            "decoder-only",
            dict(norm="rms", qk_norm="all", block_norms="output", n_kv_heads=2, norm_first=True),
        ),  # OLMo 2
        ("encoder-only", dict(type_vocab_size=2, output_head="mlm", embed_norm=True, tie_generator=True)),
        ("encoder-only", dict(output_head="none", positional="learned")),
    ],
)
def test_the_size_check_counts_what_each_shape_allocates(shape, extra):
    model = build_model(config(shape, **extra), seed=0)
    numbers = sum(p.numel() for p in model.parameters())
    tables = [pe.table for _, pe in model.positional_encodings() if "table" in pe._buffers]
    numbers += sum(t.untyped_storage().nbytes() // t.element_size() for t in tables)  # a zero view: one row
    assert parameter_count(model.config) == numbers


def test_grouped_query_attention_repeats_each_kv_head_for_its_group():
    """Recomputed here: softmax(q_h k_g^T / sqrt(d)) with g = h // (H / H_kv), from the projections' weights."""
    model = build_model(config("decoder-only", n_kv_heads=2), seed=1)
    attn = model.decoder.layers[0].self_attn
    assert attn.k_proj.weight.shape == (2 * 4, 16)  # 2 kv heads of width 4
    x = torch.randn(1, 5, 16)
    from model.network.recording import record

    with torch.no_grad(), record(model) as rec:
        attn(x, x, torch.ones(5, 5, dtype=torch.bool).tril())
    got = rec.attention[("decoder_self", 0)][-1][0]  # (H, T, T)
    q = (x @ attn.q_proj.weight.T + attn.q_proj.bias).view(5, 4, 4).transpose(0, 1)
    k = (x @ attn.k_proj.weight.T + attn.k_proj.bias).view(5, 2, 4).transpose(0, 1)
    for h in range(4):
        g = model.config.kv_head_of(h)
        assert g == h // 2
        scores = q[h] @ k[g].T / math.sqrt(4)
        scores = scores.masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), float("-inf"))
        torch.testing.assert_close(got[h], scores.softmax(-1))


def test_partial_rope_rotates_only_the_first_dims():
    """rope_dim=2 of a head of 4: dims 0, 1 rotate by m * base^0 (the "half" pairing of 2 dims), dims 2, 3 pass."""
    model = build_model(config("decoder-only", positional="rope", pe_layout="half", rope_dim=2), seed=2)
    pos = model.tgt_pe.self_attention(torch.arange(3), torch.arange(3))
    x = torch.randn(1, 1, 3, 4)
    out = pos.rotate(x)
    assert torch.equal(out[..., 2:], x[..., 2:])
    m = torch.arange(3, dtype=torch.float32)
    c, s = torch.cos(m), torch.sin(m)
    a, b = x[0, 0, :, 0], x[0, 0, :, 1]
    torch.testing.assert_close(out[0, 0, :, 0], a * c - b * s)
    torch.testing.assert_close(out[0, 0, :, 1], a * s + b * c)


@pytest.mark.parametrize("kv", [4, 2, 1])
def test_decoder_only_cached_steps_equal_the_whole_sequence(kv):
    model = build_model(config("decoder-only", n_kv_heads=kv, positional="rope"), seed=3)
    ids = torch.tensor([[1, 4, 5, 6, 7, 8]])
    with torch.no_grad():
        whole = model.decode(ids)
        cache = model.new_cache()
        first = model.decode(ids[:, :3], cache=cache)
        rest = [model.decode(ids[:, i : i + 1], cache=cache) for i in range(3, 6)]
    torch.testing.assert_close(torch.cat([first, *rest], dim=1), whole, atol=1e-5, rtol=1e-5)
    assert cache.layers[0].self_attn.k.shape[1] == kv  # the cache keeps the kv heads only


def test_capture_and_decoding_of_the_new_shapes():
    tok = Tokenizer(VOCAB, VOCAB)
    dec = build_model(config("decoder-only", n_kv_heads=2), seed=4)
    cap = capture(dec, tok, "abc=")
    assert cap.target_tokens == list("abc=") and cap.source_tokens == []
    assert cap.decoder_self.shape == (2, 4, 4, 4) and cap.log_probs.shape == (4, len(VOCAB))
    assert cap.encoder_self.size == 0 and cap.cross.shape == (0, 4, 4, 0)
    np.testing.assert_allclose(cap.decoder_self.sum(-1), 1.0, atol=1e-5)
    assert np.all(np.triu(cap.decoder_self, k=1) == 0)  # causal
    trace = greedy_decode(dec, tok, "abc=", max_new_tokens=4, stop_at_eos=False)
    assert len(trace.steps) == 4 and trace.decoder_inputs(2)[:4] == list("abc=")
    assert [s.decoder_self.shape[-1] for s in trace.steps] == [4, 5, 6, 7]  # prompt + what was written
    with torch.no_grad():  # each step's token is the argmax of the whole sequence's last position
        seq = VOCAB.encode("abc=")
        for s in trace.steps:
            assert s.token_id == int(dec.decode(torch.tensor([seq]))[0, -1].argmax())
            seq.append(s.token_id)
    enc = build_model(config("encoder-only", output_head="none"), seed=5)
    cap = capture(enc, tok, "abc")
    assert cap.source_tokens == ["a", "b", "c", "</s>"] and cap.encoder_self.shape == (2, 4, 4, 4)
    assert cap.log_probs is None and cap.decoder_self.size == 0
    assert np.all(cap.encoder_self[:, :, 0, 3] > 0)  # bidirectional: the first query sees the last key


def test_interventions_on_a_decoder_only_model():
    """Heads off: the head's output is zero before W^O (so the log-probs change); positions shifted: a RoPE decoder
    reads the same text at positions + 3, and only relative offsets matter, so nothing changes but rounding."""
    tok = Tokenizer(VOCAB, VOCAB)
    model = build_model(config("decoder-only", n_kv_heads=2, positional="rope"), seed=6)
    plain = capture(model, tok, "abcab=", qkv=True)
    off = capture(model, tok, "abcab=", qkv=True, ablate=[("decoder_self", 1, 3)])
    assert off.interventions == {"ablate": [["decoder_self", 1, 3]]}
    assert np.all(off.head_outputs["decoder_self"][1, 3] == 0) and not np.allclose(off.log_probs, plain.log_probs)
    np.testing.assert_allclose(off.decoder_self[0], plain.decoder_self[0], atol=1e-6)  # layer 0 is before it
    shifted = capture(model, tok, "abcab=", positional="shifted", shift=3)
    np.testing.assert_allclose(shifted.log_probs, plain.log_probs, atol=1e-4)
    learned = build_model(config("decoder-only", positional="learned"), seed=7)
    a, b = capture(learned, tok, "abcab="), capture(learned, tok, "abcab=", positional="shifted", shift=3)
    assert not np.allclose(a.log_probs, b.log_probs)  # a learned table: other rows, other outputs


def test_beam_search_of_width_one_is_greedy_on_a_decoder_only_model():
    from model.decoding.beam import beam_search

    tok = Tokenizer(VOCAB, VOCAB)
    model = build_model(config("decoder-only", n_kv_heads=2), seed=8)
    greedy = greedy_decode(model, tok, "abc=", max_new_tokens=6)
    beam = beam_search(model, tok, "abc=", beam_size=1, max_len=6)
    assert beam.output_ids == greedy.output_ids and beam.source_tokens == list("abc=")


def test_the_work_budget_counts_what_each_shape_computes():
    """A decoder-only page: prompt and continuation as one causal sequence, no cross-attention, 50 tokens written by
    default; an encoder-only page writes nothing. (Sums written here from the shapes.)"""
    from model.analysis import budget

    dec = config("decoder-only", max_len=32)
    assert budget.steps_for(dec, 10) == 22 and budget.steps_for(dec, 2) == 30  # the positions left, at most 50
    assert budget.steps_for(config("encoder-only"), 10) == 0
    assert budget.steps_for(config("encoder-decoder"), 10) == 31  # unchanged: max_len - 1
    S, T = 7, 5
    assert budget.figure_bytes(dec, S, T) == 24 * dec.n_heads * dec.n_decoder_layers * (S + T) ** 2
    both = config("encoder-decoder")
    assert budget.figure_bytes(both, S, T) == 24 * both.n_heads * 2 * (S * S + T * T + T * S)
