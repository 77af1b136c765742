"""The model against an independent reference (torch's nn.Transformer with the same weights), and
the behaviour of masks, recording and the fused path."""

import math

import pytest
import torch
from torch import nn

from model import TransformerConfig, build_model, record
from model.network.attention import attention, subsequent_mask


def reference_from(model) -> nn.Transformer:
    """nn.Transformer carrying our model's weights (fused in_proj = cat(W_q, W_k, W_v))."""
    c = model.config
    ref = nn.Transformer(
        c.d_model,
        c.n_heads,
        c.n_encoder_layers,
        c.n_decoder_layers,
        c.d_ff,
        dropout=0.0,
        batch_first=True,
        norm_first=c.norm_first,
        layer_norm_eps=c.layer_norm_eps,
    ).eval()

    def mha(dst, src):
        dst.in_proj_weight.copy_(torch.cat([src.q_proj.weight, src.k_proj.weight, src.v_proj.weight]))
        dst.in_proj_bias.copy_(torch.cat([src.q_proj.bias, src.k_proj.bias, src.v_proj.bias]))
        dst.out_proj.load_state_dict(src.out_proj.state_dict())

    with torch.no_grad():
        for dst, src in zip(ref.encoder.layers, model.encoder.layers):
            mha(dst.self_attn, src.self_attn)
            dst.linear1.load_state_dict(src.ff.linear1.state_dict())
            dst.linear2.load_state_dict(src.ff.linear2.state_dict())
            dst.norm1.load_state_dict(src.norm1.state_dict())
            dst.norm2.load_state_dict(src.norm2.state_dict())
        for dst, src in zip(ref.decoder.layers, model.decoder.layers):
            mha(dst.self_attn, src.self_attn)
            mha(dst.multihead_attn, src.cross_attn)
            dst.linear1.load_state_dict(src.ff.linear1.state_dict())
            dst.linear2.load_state_dict(src.ff.linear2.state_dict())
            for n in ("norm1", "norm2", "norm3"):
                getattr(dst, n).load_state_dict(getattr(src, n).state_dict())
        ref.encoder.norm.load_state_dict(model.encoder.norm.state_dict())
        ref.decoder.norm.load_state_dict(model.decoder.norm.state_dict())
    return ref


@pytest.mark.parametrize("norm_first", [False, True])
def test_matches_torch_nn_transformer_with_the_same_weights(norm_first):
    config = TransformerConfig(
        src_vocab_size=40,
        tgt_vocab_size=30,
        d_model=32,
        n_heads=4,
        d_ff=64,
        n_encoder_layers=2,
        n_decoder_layers=3,
        dropout=0.0,
        norm_first=norm_first,
        final_norm=True,
        max_len=64,
    )
    model = build_model(config, seed=1)
    with torch.no_grad():  # non-trivial norms so that a swapped norm would show
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(torch.randn_like(p) * 0.3)
    ref = reference_from(model)
    src = torch.randint(4, 40, (2, 9))
    tgt = torch.randint(4, 30, (2, 7))
    ours = model(src, tgt)
    scale = math.sqrt(32)
    with torch.no_grad():
        s = model.src_embed(src) * scale + model.src_pe.table[:9]
        t = model.tgt_embed(tgt) * scale + model.tgt_pe.table[:7]
        hidden = ref(s, t, tgt_mask=nn.Transformer.generate_square_subsequent_mask(7), tgt_is_causal=True)
        expected = model.generator(hidden)
    assert torch.allclose(ours, expected, atol=1e-5)


def test_attention_function_masks_and_normalises():
    q, k, v = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 6, 4), torch.randn(2, 3, 6, 4)
    mask = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    mask[1, ..., 4:] = False
    out, w = attention(q, k, v, mask)
    assert torch.allclose(w.sum(-1), torch.ones(2, 3, 5))
    assert torch.all(w[1, :, :, 4:] == 0)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.allclose(out, expected, atol=1e-6)


def test_subsequent_mask_is_lower_triangular():
    m = subsequent_mask(4)
    assert m.tolist() == [
        [True, False, False, False],
        [True, True, False, False],
        [True, True, True, False],
        [True, True, True, True],
    ]


def test_recorded_weights_are_row_stochastic_causal_and_ignore_padding(tiny):
    src = torch.tensor([[5, 6, 7, 8, 2], [9, 10, 2, 0, 0]])  # second source padded
    tgt = torch.tensor([[1, 5, 6, 7], [1, 9, 10, 0]])  # second target padded
    with torch.no_grad(), record(tiny) as rec:
        tiny(src, tgt)
    assert sorted(rec.attention) == sorted(
        [("encoder_self", i) for i in range(3)] + [(k, i) for k in ("decoder_self", "cross") for i in range(2)]
    )
    for (kind, layer), maps in rec.attention.items():
        (w,) = maps
        assert w.shape[:2] == (2, 3)
        assert torch.allclose(w.sum(-1), torch.ones(w.shape[:-1]), atol=1e-6), (kind, layer)
        if kind == "decoder_self":
            assert torch.all(w.triu(diagonal=1) == 0)
            assert torch.all(w[1, :, :, 3] == 0)  # padded target key
        else:
            assert torch.all(w[1, :, :, 3:] == 0)  # padded source keys
            assert torch.all(w[0, :, :, 3:] > 0)


def test_recording_does_not_change_outputs_and_leaves_no_hooks(tiny):
    src = torch.randint(4, 30, (3, 11))
    tgt = torch.randint(4, 30, (3, 8))
    with torch.no_grad():
        plain = tiny(src, tgt)
        with record(tiny):
            recorded = tiny(src, tgt)
    assert torch.allclose(plain, recorded, atol=1e-5)
    assert all(not m._forward_hooks for m in tiny.modules())


def test_fused_path_is_used_when_nobody_records(tiny, monkeypatch):
    calls = []
    import model.network.attention as attn_module

    real = attn_module.F.scaled_dot_product_attention
    monkeypatch.setattr(attn_module.F, "scaled_dot_product_attention", lambda *a, **k: calls.append(1) or real(*a, **k))
    src, tgt = torch.randint(4, 30, (1, 5)), torch.randint(4, 30, (1, 4))
    with torch.no_grad():
        tiny(src, tgt)
        assert len(calls) == 3 + 2 * 2  # every attention module, fused
        with record(tiny):
            tiny(src, tgt)
    assert len(calls) == 7  # none while recording


def test_encode_and_decode_compose_to_forward(tiny):
    src, tgt = torch.randint(4, 30, (2, 6)), torch.randint(4, 30, (2, 5))
    with torch.no_grad():
        memory, mask = tiny.encode(src)
        assert memory.shape == (2, 6, 24) and mask is None
        assert torch.equal(tiny.decode(tgt, memory, mask), tiny(src, tgt))
        last = tiny.decode(tgt, memory, mask, last_only=True)
        assert torch.allclose(last[:, 0], tiny(src, tgt)[:, -1], atol=1e-6)


def test_config_variants_build_and_validate():
    for overrides in (
        dict(positional="learned"),
        dict(norm="std"),
        dict(activation="gelu"),
        dict(pe_layout="half"),
        dict(share_embeddings=True, tie_generator=True, generator_bias=False),
    ):
        m = build_model(TransformerConfig.preset("tiny", src_vocab_size=20, tgt_vocab_size=20, **overrides))
        out = m(torch.randint(0, 20, (1, 4)), torch.randint(0, 20, (1, 3)))
        assert out.shape == (1, 3, 20)
    tied = build_model(
        TransformerConfig.preset(
            "tiny", src_vocab_size=20, tgt_vocab_size=20, share_embeddings=True, tie_generator=True
        )
    )
    assert tied.generator.weight is tied.tgt_embed.weight is tied.src_embed.weight
    with pytest.raises(ValueError, match="divisible"):
        TransformerConfig(10, 10, d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="share_embeddings"):
        TransformerConfig(10, 12, share_embeddings=True)
    with pytest.raises(ValueError, match="unknown preset"):
        TransformerConfig.preset("huge", src_vocab_size=1, tgt_vocab_size=1)
    base = TransformerConfig.preset("base", src_vocab_size=100, tgt_vocab_size=100)
    assert (base.d_model, base.n_heads, base.d_ff, base.n_encoder_layers, base.n_decoder_layers) == (512, 8, 2048, 6, 6)
    assert base.norm_first is False and base.has_final_norm is False


def test_sequences_longer_than_the_positional_table_are_refused(tiny):
    with pytest.raises(ValueError, match="max_len=64"):
        tiny(torch.randint(4, 30, (1, 65)), torch.randint(4, 30, (1, 3)))


def test_a_long_inputs_feed_forward_goes_in_blocks_of_positions_with_the_same_numbers(monkeypatch):
    """Past FF_BLOCK_NUMBERS hidden numbers the positions go in blocks (a 4,096-token pass holds one block of the
    hidden layer, not the whole): every block is a call of the first projection, and the output is the whole
    input's, computed here position by position from the layer's own weights."""
    from model.network import sublayers as transformer

    torch.manual_seed(0)
    config = TransformerConfig(src_vocab_size=8, tgt_vocab_size=8, d_model=16, n_heads=2, d_ff=32, ff_gated=True,
                               activation="silu")  # fmt: skip
    ff = transformer.FeedForward(config).eval()
    x = torch.randn(2, 37, 16)
    calls = []
    ff.linear1.register_forward_hook(lambda module, args, out: calls.append(args[0].shape[0]))
    monkeypatch.setattr(transformer, "FF_BLOCK_NUMBERS", 32 * 10)  # 10 positions a block
    with torch.no_grad():
        out = ff(x)
        blocks = list(calls)
        w1, w3, w2 = ff.linear1, ff.linear3, ff.linear2
        expected = torch.stack([torch.stack([w2(torch.nn.functional.silu(w1(p)) * w3(p)) for p in row]) for row in x])
    assert blocks == [10] * 7 + [4]  # 74 positions in blocks of 10
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=1e-5)
