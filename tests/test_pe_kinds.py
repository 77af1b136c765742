"""The numbers and figures of the RoPE, ALiBi and T5 views (model/network/pe_kinds.py, viz/pe_kinds_figs.py)."""

import math

import numpy as np
import pytest
import torch

from model.network import pe_kinds
from model.network.positional import relative_position_bucket
from tests.conftest import make_tiny
from viz import pe_kinds_figs as figs


def test_a_pair_turns_by_theta_per_position_and_keeps_its_length():
    path = pe_kinds.rope_pair_path(np.array([0.6, -0.8]), np.arange(5), 0.3)
    assert np.allclose(np.hypot(path[:, 0], path[:, 1]), 1.0)
    angles = np.unwrap(np.arctan2(path[:, 1], path[:, 0]))
    assert np.allclose(np.diff(angles), 0.3)
    with pytest.raises(ValueError):
        pe_kinds.rope_pair_path(np.zeros(3), np.arange(2), 0.1)


def test_rope_check_scores_are_the_rotated_dot_products_and_depend_on_m_minus_n():
    check = pe_kinds.rope_check(8, 20, base=100.0, seed=4)
    rng = np.random.default_rng(4)
    q, k = rng.standard_normal(8), rng.standard_normal(8)
    theta = 100.0 ** (-np.arange(0, 8, 2) / 8)

    def turn(x, m):
        z = (x[0::2] + 1j * x[1::2]) * np.exp(1j * m * theta)
        return np.stack([z.real, z.imag], axis=1).ravel()

    assert check.scores[7, 3] == pytest.approx(turn(q, 7) @ turn(k, 3))
    assert check.max_spread < 1e-12
    assert np.allclose(pe_kinds.rope_frequencies(8, 100.0), theta)


def test_rope_decay_starts_at_one_and_the_bound_at_its_sum():
    dist, same, bound = pe_kinds.rope_decay(16, 64)
    assert dist[0] == 0 and same[0] == pytest.approx(1.0) and bound[0] == pytest.approx((8 + 1) / 2)
    assert same[1] == pytest.approx(np.mean(np.cos(10000.0 ** (-np.arange(0, 16, 2) / 16))))
    assert bound[-1] < bound[0]


def test_alibi_matrix_is_minus_slope_times_distance_and_causal_hides_the_future():
    slopes, bias = pe_kinds.alibi_matrix(2, 4)
    assert slopes.tolist() == [2.0**-4, 2.0**-8]
    assert bias[0, 3, 1] == -(2.0**-4) * 2 and bias[1, 0, 3] == -(2.0**-8) * 3 and bias[0, 2, 2] == 0
    causal = pe_kinds.alibi_matrix(2, 4, causal=True)[1]
    assert np.isnan(causal[0, 1, 2]) and causal[0, 2, 1] == bias[0, 2, 1]


def test_relative_curves_read_each_stacks_table_at_its_bucket(char_tokenizer):
    model = make_tiny(char_tokenizer, positional="relative", n_heads=4, d_model=32)
    curves = pe_kinds.relative_bias_curves(model, 10)
    assert set(curves) == {"source", "target"}
    rel, values = curves["target"]
    table = model.tgt_pe.relative_attention_bias.weight.detach().numpy()
    for i in (0, 3, 15, 20):  # rel -10 .. 10: keys after the query share bucket 0 in the decoder
        bucket = int(relative_position_bucket(torch.tensor(int(rel[i])), False))
        assert np.allclose(values[:, i], table[bucket])
    assert pe_kinds.relative_bias_curves(make_tiny(char_tokenizer), 10) == {}
    r, b = pe_kinds.relative_buckets(3, True)
    assert r.tolist() == [-3, -2, -1, 0, 1, 2, 3] and b.tolist() == [3, 2, 1, 0, 17, 18, 19]


def test_head_maps_share_one_colour_range():
    maps = np.stack([np.zeros((3, 3)), -np.ones((3, 3)) * 2])
    fig = figs.head_maps(maps, ["a", "b"], "bias", title="t")
    assert fig.layout.coloraxis.cmin == -2 and fig.layout.coloraxis.cmax == 0
    assert all(t.coloraxis == "coloraxis" for t in fig.data)
    with pytest.raises(ValueError):
        figs.head_maps(maps, ["a"], "bias")
    fixed = figs.head_maps(maps, ["a", "b"], "cos", zrange=(-1.0, 1.0))  # a range of its own, e.g. cosines
    assert (fixed.layout.coloraxis.cmin, fixed.layout.coloraxis.cmax) == (-1.0, 1.0)
    assert sum(1 for t in fixed.data if t.showscale is not False) >= 1 and len(fixed.layout.annotations) == 2


def test_length_curves_shade_the_trained_lengths_and_name_a_mismatch():
    fig = figs.length_curves({"x": (np.arange(1, 5), np.array([1, 0.5, 0, 0]))}, (1, 2), "title")
    assert fig.layout.shapes[0].x0 == 0.5 and fig.layout.shapes[0].x1 == 2.5 and fig.data[0].name == "x"
    with pytest.raises(ValueError, match="x: 4 lengths for 3"):
        figs.length_curves({"x": (np.arange(1, 5), np.zeros(3))}, (1, 2), "title")


def test_score_bias_adds_the_bias_to_the_scaled_scores():
    fig = figs.score_bias(np.array([1.0, 2.0]), np.array([0.0, -0.5]), ["a", "a"], "t")
    assert list(fig.data[2].y) == [1.0, 1.5] and list(fig.data[0].x) == ["0: a", "1: a"]
    with pytest.raises(ValueError):
        figs.score_bias(np.zeros(2), np.zeros(3), ["a", "b"], "t")
    assert math.isclose(figs.rope_frequencies(np.array([1.0, 0.1])).data[0].customdata[1], 2 * math.pi / 0.1)
