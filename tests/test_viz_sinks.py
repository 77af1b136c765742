"""viz/sinks.py: the share of attention on the first token and the map without it, against sums written here."""

import numpy as np
import pytest

from viz import sinks


def test_sink_share_averages_the_first_column_over_the_queries():
    w = np.zeros((2, 3, 4, 4), dtype=np.float32)
    w[..., 0] = 0.25
    w[..., 1:] = 0.25
    w[1, 2, :, 0], w[1, 2, :, 1:] = [1.0, 0.7, 0.4, 0.1], [[0, 0, 0], [0.3, 0, 0], [0.3, 0.3, 0], [0.3, 0.3, 0.3]]
    share = sinks.sink_share(w)
    assert share.shape == (2, 3)
    assert share[0, 0] == pytest.approx(0.25) and share[1, 2] == pytest.approx((1.0 + 0.7 + 0.4 + 0.1) / 4)
    causal = sinks.sink_share(w, causal=True)  # query 0 (which sees only the first token) left out
    assert causal[1, 2] == pytest.approx((0.7 + 0.4 + 0.1) / 3)
    with pytest.raises(ValueError, match="layers, heads, queries, keys"):
        sinks.sink_share(w[0])


def test_without_sink_renormalises_each_row_over_the_other_keys():
    w = np.array([[1.0, 0.0, 0.0], [0.6, 0.3, 0.1], [0.2, 0.2, 0.6]], dtype=np.float32)
    rest = sinks.without_sink(w)
    assert rest.shape == (3, 2)
    np.testing.assert_allclose(rest[0], [0.0, 0.0])  # all of it was on the sink: nothing left to show
    np.testing.assert_allclose(rest[1], [0.75, 0.25], atol=1e-6)
    np.testing.assert_allclose(rest[2], [0.25, 0.75], atol=1e-6)
    with pytest.raises(ValueError):
        sinks.without_sink(w[:, :1])


def test_sink_map_shows_each_share_in_a_fixed_0_to_1_scale():
    share = np.array([[0.9, 0.1], [0.5, 0.0]], dtype=np.float32)
    fig = sinks.sink_map(share, "▁The", "t")
    trace = fig.data[0]
    np.testing.assert_allclose(np.asarray(trace.z), share)
    assert (trace.zmin, trace.zmax) == (0.0, 1.0) and "%{z:.0%}" in trace.hovertemplate
    assert "The" in trace.hovertemplate and fig.layout.yaxis.autorange == "reversed"


def test_the_share_on_the_other_special_tokens_is_in_the_hover():
    w = np.zeros((1, 1, 3, 3), dtype=np.float32)
    w[0, 0] = [[0.5, 0.2, 0.3], [0.1, 0.1, 0.8], [0.4, 0.4, 0.2]]
    others = sinks.keys_share(w, [2])
    assert others[0, 0] == pytest.approx((0.3 + 0.8 + 0.2) / 3)
    causal = sinks.keys_share(w, [2], causal=True)  # only query 2 can see key 2
    assert causal[0, 0] == pytest.approx(0.2)
    assert np.all(sinks.keys_share(w, []) == 0)
    fig = sinks.sink_map(sinks.sink_share(w), "[CLS]", "t", others, "[SEP]")
    np.testing.assert_allclose(np.asarray(fig.data[0].customdata), others)
    assert "%{customdata:.0%}" in fig.data[0].hovertemplate and "[SEP]" in fig.data[0].hovertemplate
