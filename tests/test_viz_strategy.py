"""Figure builders of issue 15: the beam tree, sampling distributions, two models side by side, training curves."""

import numpy as np
import pytest

from viz.compare_figs import compare_heatmaps, diff_bound, training_curve
from viz.strategy_figs import beam_tree, sampling_overview
from viz.tokens import TICK_PX

# A beam of 2 over two steps: step 0 ranks a, b, </s>, c; step 1 extends a (twice) and b.
TREE = {
    "step": np.array([0, 0, 0, 0, 1, 1, 1, 1]),
    "rank": np.array([0, 1, 2, 3, 0, 1, 2, 3]),
    "parent": np.array([-1, -1, -1, -1, 0, 1, 0, 0]),
    "status": ["live", "live", "finished", "pruned", "finished", "live", "live", "pruned"],
    "token": ["a", "b", "</s>", "c", "</s>", "x", "y", "z"],
    "tokens": [["a"], ["b"], ["</s>"], ["c"], ["a", "</s>"], ["b", "x"], ["a", "y"], ["a", "z"]],
    "log_prob": np.array([-0.1, -0.5, -1.0, -2.0, -0.3, -0.9, -1.0, -3.0]),
    "score": np.array([-0.1, -0.5, -1.0, -2.0, -0.28, -0.8, -0.9, -2.8]),
    "best": np.array([True, False, False, False, True, False, False, False]),
}


def _trace(fig, name):
    return next(t for t in fig.data if t.name == name)


def test_the_beam_tree_draws_each_hypothesis_by_status_with_its_parent():
    fig = beam_tree(TREE, width_px=800)
    kept, done, pruned = (
        _trace(fig, "kept"),
        _trace(fig, "finished: wrote &lt;/s&gt; (label: its score)"),
        _trace(fig, "pruned"),
    )
    assert list(kept.x) == [1, 1, 2, 2] and list(kept.y) == [0, 1, 1, 2] and list(kept.text) == ["a", "b", "x", "y"]
    assert list(done.text) == ["-1.00", "-0.28"]  # finished hypotheses are labelled with their score
    assert list(pruned.x) == [1, 2] and list(pruned.text) == ["c", "z"]
    best = _trace(fig, "best hypothesis")
    assert list(best.x) == [1, 2] and list(best.y) == [0, 0]
    assert list(kept.marker.line.width) == [2.5, 0, 0, 0]  # the best path's nodes are outlined
    edges = [t for t in fig.data if t.mode == "lines" and t.name is None]
    kept_edges = [e for e in edges if e.line.dash == "solid"][0]
    # every extension of step 1 is joined to its parent at step 0: (1, parent rank) -> (2, rank)
    pairs = {(kept_edges.y[i], kept_edges.y[i + 1]) for i in range(0, len(kept_edges.y), 3)}
    assert pairs == {(0, 0), (1, 1), (0, 2)}
    assert fig.layout.yaxis.ticktext == ("1", "2", "3", "4") and fig.layout.yaxis.range[0] > fig.layout.yaxis.range[1]
    assert all(t.textfont.size >= TICK_PX for t in fig.data if t.mode == "markers+text")


def test_long_tokens_are_shortened_to_a_steps_width():
    tree = dict(TREE, token=["voiture"] * 8, tokens=[["voiture"]] * 8)
    wide, narrow = beam_tree(tree, width_px=800), beam_tree(tree, width_px=60)
    assert _trace(wide, "kept").text[0] == "voiture"
    assert _trace(narrow, "kept").text[0].endswith("…") and len(_trace(narrow, "kept").text[0]) <= 3
    assert "voiture" in _trace(narrow, "kept").customdata[0][0]  # the hover keeps the whole token
    with pytest.raises(ValueError, match="tree\\['score'\\] has 3 entries"):
        beam_tree(dict(TREE, score=np.zeros(3)))


def test_sampling_overview_outlines_what_was_drawn():
    tokens = [["a", "b", "c"], ["</s>", "a", "b"]]
    probs = np.array([[0.6, 0.3, 0.1], [0.5, 0.3, 0.2]])
    fig = sampling_overview(tokens, probs, [1, -1], ["b", "q"], [0.3, 0.05])
    heat = fig.data[0]
    np.testing.assert_allclose(np.array(heat.z, dtype=float)[:3], probs.T)  # candidates down, steps across
    assert list(heat.y) == ["1", "2", "3", "other"]  # step 2 drew a token outside the candidates shown
    assert heat.z[3][1] == pytest.approx(0.05) and np.isnan(heat.z[3][0])
    words = next(
        t for t in fig.data if t.type == "scatter" and t.mode == "text"
    )  # each cell's word, drawn over the map
    cells = dict(zip(zip(words.x, words.y), zip(words.text, words.textfont.color)))
    assert cells[(1, "1")][0] == "a" and cells[(2, "1")][0] == "&lt;/s&gt;" and cells[(2, "other")][0] == "q"
    assert (1, "other") not in cells  # step 1 drew from the candidates: no word in its "other" cell
    # white on a dark (probable) cell, dark text on a light one
    assert cells[(1, "1")][1] == "white" and cells[(1, "3")][1] not in ("white", "#ffffff")
    drawn = _trace(fig, "drawn")
    assert list(drawn.x) == [1, 2] and list(drawn.y) == ["2", "other"]
    assert sampling_overview(tokens, probs, [0, 2], ["a", "b"], [0.6, 0.2]).data[0].y == ("1", "2", "3")
    with pytest.raises(ValueError, match="one entry per step"):
        sampling_overview(tokens, probs, [0], ["a"], [0.6])


def test_two_maps_and_their_difference_share_tokens_and_scales():
    a = np.array([[0.9, 0.1, 0.0], [0.2, 0.5, 0.3]])
    b = np.array([[0.5, 0.5, 0.0], [0.2, 0.2, 0.6]])
    fig = compare_heatmaps(a, b, ["<s>", "x"], ["p", "q", "</s>"], ("A: one", "B: two"), "title")
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert len(heat) == 3 and [t.coloraxis for t in heat] == ["coloraxis", "coloraxis", "coloraxis2"]
    np.testing.assert_allclose(np.array(heat[2].z, dtype=float), a - b, atol=1e-6)
    axis = fig.layout.coloraxis2
    assert axis.cmin == -axis.cmax and axis.cmax == pytest.approx(0.4) and axis.cmid == 0
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == 1
    assert [an.text for an in fig.layout.annotations] == ["A: one", "B: two", "A: one − B: two"]
    short = compare_heatmaps(a, b, ["<s>", "x"], ["p", "q", "</s>"], ("A: one", "B: two"), difference="A − B")
    assert [an.text for an in short.layout.annotations][2] == "A − B"
    domains = [fig.layout[f"xaxis{s}"].domain for s in ("", "2", "3")]
    assert domains[0][1] < domains[1][0] < domains[1][1] < domains[2][0]  # three panels, left to right
    assert list(heat[0].x) == ["0: p", "1: q", "2: &lt;/s&gt;"] and list(heat[0].y) == ["0: &lt;s&gt;", "1: x"]
    masked = compare_heatmaps(a, b, ["<s>", "x"], ["p", "q", "</s>"], mask=np.triu(np.ones((2, 3), bool), 1))
    assert np.isnan(np.array(masked.data[2].z, dtype=float)[0, 1])
    with pytest.raises(ValueError, match="3 key columns but there are 2 key tokens"):
        compare_heatmaps(a, b, ["<s>", "x"], ["p", "q"])


def test_the_difference_scale_is_symmetric_and_never_magnifies_noise():
    assert diff_bound(np.array([[0.0, 1e-6]])) == pytest.approx(0.05)
    assert diff_bound(np.array([[-0.62, 0.3]])) == pytest.approx(0.65)


def test_training_curve_has_a_line_per_score_and_marks_the_step_shown():
    fig = training_curve([0, 10, 20], {"exact": [0.0, 0.5, 1.0], "align": [0.1, None, 0.9]}, current=10)
    assert [t.name for t in fig.data] == ["exact", "align"]
    assert list(fig.data[0].x) == [0, 1, 2] and np.isnan(fig.data[1].y[1])  # one place per snapshot
    assert fig.layout.xaxis.ticktext == ("0", "10", "20") and list(fig.data[0].customdata) == [0, 10, 20]
    assert fig.layout.shapes[0].x0 == fig.layout.shapes[0].x1 == 1  # the snapshot of step 10
    assert fig.layout.yaxis.tickformat == ".0%"
    with pytest.raises(ValueError, match="'align' has 2 values for 3 steps"):
        training_curve([0, 10, 20], {"align": [0.1, 0.2]})


def test_sampling_outlines_are_as_wide_as_their_cells():
    """Issue 21: the drawn outline was a square marker of at most 40 px, narrower than a cell (and its word); now a
    rectangle over exactly the drawn cell: one step wide, one candidate row high."""
    tokens = [["a", "b", "c"], ["d", "e", "f"]]
    probs = np.array([[0.6, 0.3, 0.1], [0.5, 0.4, 0.05]])
    fig = sampling_overview(tokens, probs, [1, -1], ["b", "q"], [0.3, 0.05], width_px=1180)
    boxes = [(s.x0, s.x1, s.y0, s.y1) for s in fig.layout.shapes]
    assert boxes == [(0.5, 1.5, 0.5, 1.5), (1.5, 2.5, 2.5, 3.5)]  # step 1: candidate 2; step 2: the row "other"
    assert fig.layout.legend.itemsizing == "constant"  # the legend still shows a readable outline symbol


def test_figures_drawn_on_grey_keep_no_padding_band():
    """A grey plot background (masked cells, a drawn-from distribution's rest) keeps margin pad 0: Streamlit's chart
    theme pads the plot area by 8 px otherwise, and the grey shows as a band around the chart."""
    from viz.attention_figs import attention_heatmap
    from viz.inside_figs import mask_row
    from viz.overview_figs import layer_head_overview

    a = np.array([[0.9, 0.1, 0.0], [0.2, 0.5, 0.3]])
    mask = np.triu(np.ones((2, 3), bool), 1)
    figs = {
        "compare": compare_heatmaps(a, a, ["<s>", "x"], ["p", "q", "</s>"], mask=mask),
        "sampling": sampling_overview([["a", "b"]], np.array([[0.6, 0.3]]), [0], ["a"], [0.6]),
        "mask": mask_row(np.array([True, False, True]), ["p", "q", "</s>"]),
        "heatmap": attention_heatmap(a, ["<s>", "x"], ["p", "q", "</s>"], mask=mask),
        "overview": layer_head_overview(np.tile(a, (2, 2, 1, 1)), "t", mask=mask),
    }
    for name, fig in figs.items():
        assert fig.layout.plot_bgcolor not in (None, "white", "#fff", "#ffffff"), name  # grey indeed
        assert fig.layout.margin.pad == 0, name
