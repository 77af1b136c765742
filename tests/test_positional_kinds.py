"""RoPE, ALiBi and T5's relative bias inside the one model: each against its paper's formula written out here
independently, the relative-position property on identical tokens, checkpoints, the fused path and decoding."""

import math

import numpy as np
import pytest
import torch

from model import capture, greedy_decode, load_checkpoint, record, sample, save_checkpoint
from model.analysis.inside import step_from_capture
from model.decoding import generate
from model.decoding.beam import beam_search
from model.network.attention import attention
from model.network.positional import alibi_slopes, relative_position_bucket, rope_angles, rope_rotate
from tests.conftest import make_tiny

NEW_KINDS = ("rope", "alibi", "relative")


def model_of(tokenizer, kind, **overrides):
    return make_tiny(tokenizer, **{"positional": kind, "n_heads": 4, "d_model": 32, **overrides})


def encoder_layer0_log_weights(model, n=9, token=5):
    """(H, n, n) log of layer-0 encoder self-attention on a run of n identical source tokens."""
    src = torch.full((1, n), token)
    with torch.no_grad(), record(model) as rec:
        model.encode(src)
    return rec.attention[("encoder_self", 0)][-1][0].double().log()


def spread_along_diagonals(logw):
    """Largest, over heads and offsets d = j - i, of the spread of log w[i, i+d] - log w[i, i] along i."""
    H, n, _ = logw.shape
    rel = logw - torch.diagonal(logw, dim1=1, dim2=2)[:, :, None]  # minus each row's diagonal
    worst = 0.0
    for d in range(-(n - 2), n - 1):
        values = torch.diagonal(rel, offset=d, dim1=1, dim2=2)  # (H, n - |d|)
        worst = max(worst, float((values.max(-1).values - values.min(-1).values).max()))
    return worst


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_on_identical_tokens_layer0_weights_depend_on_i_minus_j_only(char_tokenizer, kind):
    logw = encoder_layer0_log_weights(model_of(char_tokenizer, kind))
    assert spread_along_diagonals(logw) < 1e-4
    assert float((logw - logw[:, :1, :1]).abs().max()) > 1e-3  # and they do depend on position


def test_sinusoidal_weights_on_identical_tokens_are_not_a_function_of_i_minus_j(char_tokenizer):
    """The negative control of the test above: absolute positions added to the embeddings."""
    assert spread_along_diagonals(encoder_layer0_log_weights(model_of(char_tokenizer, "sinusoidal"))) > 1e-2


# -- each kind against its formula --------------------------------------------------------------------------


def test_rope_interleaved_is_multiplication_by_e_to_the_i_m_theta():
    """Su et al.: pair (x_2i, x_2i+1) as the complex number x_2i + i x_2i+1, multiplied by exp(i m theta_i)."""
    torch.manual_seed(0)
    d, base = 8, 100.0
    x = torch.randn(2, 3, 6, d, dtype=torch.float64)
    m = torch.tensor([0, 1, 2, 5, 11, 40])
    cos, sin = rope_angles(m, d, base)
    got = rope_rotate(x, cos.double(), sin.double())
    z = torch.complex(x[..., 0::2], x[..., 1::2])
    theta = torch.tensor([base ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)
    want = z * torch.exp(1j * m[:, None].double() * theta[None, :])
    assert torch.allclose(got[..., 0::2], want.real, atol=1e-6) and torch.allclose(got[..., 1::2], want.imag, atol=1e-6)


def test_rope_half_rotates_dimension_i_with_i_plus_half():
    torch.manual_seed(1)
    d = 6
    x = torch.randn(4, d, dtype=torch.float64)
    m = torch.tensor([0, 3, 7, 20])
    cos, sin = rope_angles(m, d)
    got = rope_rotate(x, cos.double(), sin.double(), "half")
    for t in range(4):
        for i in range(d // 2):
            a = m[t].item() * 10000.0 ** (-2 * i / d)
            x1, x2 = x[t, i].item(), x[t, i + d // 2].item()
            assert got[t, i].item() == pytest.approx(x1 * math.cos(a) - x2 * math.sin(a), abs=1e-6)
            assert got[t, i + d // 2].item() == pytest.approx(x1 * math.sin(a) + x2 * math.cos(a), abs=1e-6)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_rope_dot_product_depends_on_m_minus_n_only(layout):
    torch.manual_seed(2)
    q, k = torch.randn(16, dtype=torch.float64), torch.randn(16, dtype=torch.float64)

    def score(m, n):
        cq, sq = rope_angles(torch.tensor([m]), 16, dtype=torch.float64)
        ck, sk = rope_angles(torch.tensor([n]), 16, dtype=torch.float64)
        return float(
            rope_rotate(q[None], cq.double(), sq.double(), layout)[0]
            @ rope_rotate(k[None], ck.double(), sk.double(), layout)[0]
        )

    for offset in (0, 1, 7):
        values = [score(m + offset, m) for m in (0, 3, 50, 400)]
        assert max(values) - min(values) < 1e-9
    assert abs(score(5, 0) - score(0, 0)) > 1e-3


def test_model_queries_are_the_projections_rotated_by_position(char_tokenizer):
    model = model_of(char_tokenizer, "rope")
    src = torch.tensor([[3, 9, 4, 4, 12, 7]])
    with torch.no_grad(), record(model, qkv=True) as rec:
        model.encode(src)
        x = model.embed(model.src_embed, src)  # layer 0's input: post-LN, nothing added
        attn = model.encoder.layers[0].self_attn
        q = attn.split_heads(attn.q_proj(x))[0].double()  # (H, T, dk)
    recorded = rec.vectors[("encoder_self", 0, "q")][-1][0].double()
    dk = q.shape[-1]
    z = torch.complex(q[..., 0::2], q[..., 1::2])
    theta = torch.tensor([10000.0 ** (-2 * i / dk) for i in range(dk // 2)], dtype=torch.float64)
    want = z * torch.exp(1j * torch.arange(6.0, dtype=torch.float64)[:, None] * theta)
    assert torch.allclose(recorded[..., 0::2], want.real, atol=1e-5)
    assert torch.allclose(recorded[..., 1::2], want.imag, atol=1e-5)


def test_alibi_slopes_as_the_paper_lists_them():
    assert alibi_slopes(8).tolist() == [2.0**-h for h in range(1, 9)]
    assert alibi_slopes(4).tolist() == [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8]
    # 6 heads: the 4 slopes of 4 heads, then slopes 1 and 3 of the 8-head sequence (2^-1, 2^-3)
    assert alibi_slopes(6).tolist() == [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8, 2.0**-1, 2.0**-3]


def test_alibi_model_adds_minus_slope_times_distance(char_tokenizer):
    model = model_of(char_tokenizer, "alibi")
    cap = capture(model, char_tokenizer, "abcde", target="edcba", qkv=True)
    enc = cap.position_bias["encoder_self"][1]  # (H, S, S) layer 1: the same bias in every layer
    S = enc.shape[-1]
    for h, slope in enumerate([2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8]):
        for i in range(S):
            for j in range(S):
                assert enc[h, i, j] == pytest.approx(-slope * abs(i - j))
    dec = cap.position_bias["decoder_self"][0]
    T = dec.shape[-1]
    assert dec[0, T - 1, 0] == pytest.approx(-0.25 * (T - 1))
    assert "cross" not in cap.position_bias


# T5's buckets worked out by hand from its definition (32 buckets, max distance 128).
# Encoder (bidirectional): 16 per direction, keys after the query from 16 on; exact below 8, then
# 8 + floor(ln(d / 8) / ln(128 / 8) * 8), at most 15: d=20 -> 8 + floor(2.64) = 10, d=100 -> 8 + floor(7.29) = 15.
ENCODER_BUCKETS = {0: 0, -1: 1, 1: 17, -7: 7, 7: 23, -20: 10, 20: 26, -100: 15, 100: 31, -1000: 15, 1000: 31}
# Decoder (unidirectional): keys after the query -> 0; exact below 16, then 16 + floor(ln(d / 16) / ln(8) * 16):
# d=40 -> 16 + floor(7.05) = 23, d=127 -> 16 + floor(15.96) = 31, farther capped at 31.
DECODER_BUCKETS = {5: 0, 0: 0, -5: 5, -15: 15, -16: 16, -40: 23, -127: 31, -500: 31}


@pytest.mark.parametrize("bidirectional, expected", [(True, ENCODER_BUCKETS), (False, DECODER_BUCKETS)])
def test_t5_buckets_match_hand_computed_values(bidirectional, expected):
    rel = torch.tensor(list(expected))
    got = relative_position_bucket(rel, bidirectional=bidirectional, num_buckets=32, max_distance=128)
    assert got.tolist() == list(expected.values())


def test_relative_model_adds_its_table_entry_for_each_bucket_once_per_stack(char_tokenizer):
    model = model_of(char_tokenizer, "relative", relative_buckets=8, relative_max_distance=16)
    table = {
        side: model.get_submodule(f"{side}_pe").relative_attention_bias.weight.detach().numpy()
        for side in ("src", "tgt")
    }
    assert table["src"].shape == (8, 4)
    cap = capture(model, char_tokenizer, "abcdefghijk", target="kjihg", qkv=True)
    for kind, side, bidirectional in (("encoder_self", "src", True), ("decoder_self", "tgt", False)):
        bias = cap.position_bias[kind]  # (L, H, T, T)
        T = bias.shape[-1]
        for i in range(T):
            for j in range(T):
                rel = j - i
                if bidirectional:  # 4 per direction: exact 0, 1, then 2 + floor(ln(d/2)/ln(8)*2), at most 3
                    d = abs(rel)
                    b = (4 if rel > 0 else 0) + (d if d < 2 else min(3, 2 + int(math.log(d / 2) / math.log(8) * 2)))
                else:  # 8 buckets one way: exact 0..3, then 4 + floor(ln(d/4)/ln(4)*4), at most 7
                    d = max(-rel, 0)
                    b = d if d < 4 else min(7, 4 + int(math.log(d / 4) / math.log(4) * 4))
                for layer in range(bias.shape[0]):
                    assert np.allclose(bias[layer, :, i, j], table[side][b])


def test_inside_step_adds_the_bias_and_reproduces_the_recorded_weights(char_tokenizer):
    for kind in NEW_KINDS:
        model = model_of(char_tokenizer, kind)
        cap = capture(model, char_tokenizer, "hello world", target="dlrow", qkv=True)
        for att in ("encoder_self", "decoder_self"):
            step = step_from_capture(cap, att, 1, 2, 3)
            assert np.allclose(step.weights, getattr(cap, att)[1, 2, 3], atol=1e-5)
            assert (step.bias is None) == (kind == "rope")


# -- the rest of the model works with them -------------------------------------------------------------------


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_fused_path_with_padding_equals_the_recorded_path(char_tokenizer, kind):
    model = model_of(char_tokenizer, kind)
    src = torch.tensor([[5, 6, 7, 8, 9, 2], [5, 6, 2, 0, 0, 0]])
    tgt = torch.tensor([[1, 9, 8, 7], [1, 6, 5, 0]])
    with torch.no_grad():
        fused = model(src, tgt)
        with record(model):
            explicit = model(src, tgt)
    assert torch.allclose(fused, explicit, atol=1e-5)


def test_attention_adds_the_bias_before_the_mask():
    q, k, v = torch.zeros(1, 1, 2, 4), torch.zeros(1, 1, 3, 4), torch.eye(3, 4)[None, None]
    bias = torch.tensor([[[0.0, math.log(3.0), 5.0], [0.0, 0.0, 0.0]]])
    mask = torch.tensor([True, True, False])
    _, w = attention(q, k, v, mask, bias=bias)
    assert torch.allclose(w[0, 0, 0], torch.tensor([0.25, 0.75, 0.0]))


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_save_and_load_round_trip(char_tokenizer, kind, tmp_path):
    model = model_of(char_tokenizer, kind)
    save_checkpoint(model, char_tokenizer, tmp_path / kind)
    loaded, _ = load_checkpoint(tmp_path / kind)
    assert loaded.config == model.config
    src, tgt = torch.tensor([[4, 5, 6, 7, 2]]), torch.tensor([[1, 7, 6]])
    with torch.no_grad():
        assert torch.equal(loaded(src, tgt), model(src, tgt))


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_cached_decoding_equals_full_prefix_decoding(char_tokenizer, kind):
    model = model_of(char_tokenizer, kind)
    sources = [[5, 6, 7, 8, 9, 10, 2], [11, 12, 2]]
    with torch.no_grad():
        memory, mask = model.encode(torch.tensor([sources[0]]))
        tgt = torch.tensor([[1, 9, 8, 7, 6, 5]])
        full = model.decode(tgt, memory, mask)
        cache = model.new_cache()
        steps = torch.cat([model.decode(tgt[:, t : t + 1], memory, mask, cache) for t in range(6)], dim=1)
    assert torch.allclose(full, steps, atol=1e-5)
    kwargs = dict(bos_id=1, eos_id=2, stop_at_eos=False)
    assert generate(model, sources, [8, 8], use_cache=True, **kwargs) == generate(
        model, sources, [8, 8], use_cache=False, **kwargs
    )


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_strategies_and_interventions_run(char_tokenizer, kind):
    model = model_of(char_tokenizer, kind)
    plain = greedy_decode(model, char_tokenizer, "abcabc", max_len=8)
    assert beam_search(model, char_tokenizer, "abcabc", beam_size=1, max_len=8).output_ids == plain.output_ids
    assert beam_search(model, char_tokenizer, "abcabc", beam_size=3, max_len=8).best is not None
    assert sample(model, char_tokenizer, "abcabc", temperature=0.0, max_len=8).output_ids == plain.output_ids
    uncached = greedy_decode(model, char_tokenizer, "abcabc", max_len=8, use_cache=False)
    assert uncached.output_ids == plain.output_ids
    base = capture(model, char_tokenizer, "abcdef", target="fedcba")
    shifted = capture(model, char_tokenizer, "abcdef", target="fedcba", positional="shifted", shift=5)
    off = capture(model, char_tokenizer, "abcdef", target="fedcba", positional="off")
    shuffled = capture(model, char_tokenizer, "abcdef", target="fedcba", positional="shuffled", seed=3)
    assert np.allclose(shifted.log_probs, base.log_probs, atol=1e-4)  # only distances count
    assert not np.allclose(off.log_probs, base.log_probs, atol=1e-3)
    assert not np.allclose(shuffled.log_probs, base.log_probs, atol=1e-3)
    assert greedy_decode(model, char_tokenizer, "abcabc", max_len=8, positional="shifted", shift=4).output_ids == (
        plain.output_ids
    )
    ablated = capture(model, char_tokenizer, "abcdef", target="fedcba", ablate=[("encoder_self", 0, 1)])
    assert not np.allclose(ablated.log_probs, base.log_probs, atol=1e-3)


def test_config_checks_the_new_fields(char_tokenizer):
    with pytest.raises(ValueError, match="rotary"):
        model_of(char_tokenizer, "rope", d_model=20, n_heads=4)  # d_head 5
    with pytest.raises(ValueError, match="relative_buckets"):
        model_of(char_tokenizer, "relative", relative_buckets=2)
    with pytest.raises(ValueError, match="relative_max_distance"):
        model_of(char_tokenizer, "relative", relative_buckets=32, relative_max_distance=16)
