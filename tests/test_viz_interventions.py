"""Figures of a changed model: head importance panels, the log-probability change, the cosine similarity."""

import numpy as np
import pytest

from viz.intervention_figs import importance_heatmap, logprob_change
from viz.positional_figs import similarity_matrix


def drops():
    rng = np.random.default_rng(0)
    return {
        "encoder_self": rng.normal(size=(3, 4)),
        "decoder_self": rng.normal(size=(2, 4)),
        "cross": rng.normal(size=(2, 4)),
    }


def test_importance_panels_hold_each_kinds_drops_and_clickable_cells():
    d = drops()
    fig = importance_heatmap(d, ablated={("cross", 1, 2), ("encoder_self", 0, 3)})
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    assert len(heatmaps) == 3 and [a.text for a in fig.layout.annotations] == ["Encoder self", "Decoder self", "Cross"]
    for trace, kind in zip(heatmaps, ["encoder_self", "decoder_self", "cross"]):
        np.testing.assert_allclose(np.asarray(trace.z), d[kind], atol=1e-6)
    cells = [t for t in fig.data if t.type == "scatter" and t.mode == "markers" and t.marker.opacity == 0]
    assert [len(c.customdata) for c in cells] == [12, 8, 8]
    for c in cells:  # each clickable marker sits on its cell and names the head and its drop
        for x, y, (kind, layer, head, value) in zip(c.x, c.y, c.customdata):
            assert (x, y) == (head, layer) and value == pytest.approx(d[kind][layer, head], abs=1e-6)
    marks = {(k, i, h) for t in fig.data if t.name == "switched off" for k, i, h, _ in t.customdata}
    assert marks == {("cross", 1, 2), ("encoder_self", 0, 3)}
    bound = max(np.abs(v).max() for v in d.values())
    assert fig.layout.coloraxis.cmin == pytest.approx(-bound) and fig.layout.coloraxis.cmax == pytest.approx(bound)
    assert fig.layout.clickmode == "event+select"


def test_importance_of_a_few_kinds_and_bad_shapes():
    fig = importance_heatmap({"cross": np.zeros((2, 3))})
    assert [a.text for a in fig.layout.annotations] == ["Cross"]
    with pytest.raises(ValueError, match=r"got \[3, 4\]"):
        importance_heatmap({"cross": np.zeros((2, 3)), "decoder_self": np.zeros((2, 4))})
    with pytest.raises(ValueError, match="layers, heads"):
        importance_heatmap({"cross": np.zeros(3)})
    with pytest.raises(ValueError, match="no attention kind"):
        importance_heatmap({})


def test_importance_cells_stay_readable_for_a_base_model():
    big = {k: np.ones((6, 8)) for k in ("encoder_self", "decoder_self", "cross")}
    fig = importance_heatmap(big, max_width=860)
    size = next(t for t in fig.data if t.type == "scatter").marker.size
    assert size >= 20 and fig.layout.height <= 450  # 144 heads: large enough to click, one screen tall


def test_logprob_change_is_the_difference_per_token():
    plain, changed = np.log([0.9, 0.5, 0.8]), np.log([0.3, 0.6, 0.8])
    fig = logprob_change(["a", "b", "</s>"], plain, changed)
    (bar,) = fig.data
    np.testing.assert_allclose(bar.y, changed - plain)
    assert list(bar.x) == ["0: a", "1: b", "2: &lt;/s&gt;"]
    assert bar.marker.color[0] == "#d62728" and bar.marker.color[1] != "#d62728"  # red: less likely now
    assert f"{(changed - plain).sum():+.3f}" in fig.layout.title.text
    with pytest.raises(ValueError, match="2 tokens"):
        logprob_change(["a", "b"], plain, changed)


def test_similarity_matrix_takes_another_measure():
    fig = similarity_matrix(np.eye(3), title="Cosine similarity", value_label="cos")
    assert fig.layout.title.text == "Cosine similarity" and fig.data[0].colorbar.title.text == "cos"


def test_a_switched_off_head_stays_marked_after_a_click_and_on_any_colour():
    """Issue 21: the cross of a switched-off head was faded by plotly once a click selected a cell, and drawn in
    near-black on dark cells; now white edged in black, never faded."""
    drops = {"cross": np.array([[0.9, -0.9], [0.0, 0.2]])}
    fig = importance_heatmap(drops, {("cross", 0, 0)})
    off = next(t for t in fig.data if t.name == "switched off")
    assert [tuple(c[:3]) for c in off.customdata] == [("cross", 0, 0)]
    assert off.unselected.marker.opacity == 1 and off.selected.marker.opacity == 1
    assert off.marker.color == "white" and off.marker.line.color != "white" and off.marker.line.width >= 2
