"""viz/attribution_figs.py on tiny arrays: panels side by side, the matrix view."""

import numpy as np
import pytest

from viz import attribution_figs as figs


def test_source_bars_one_panel_per_method_sharing_the_source_rows():
    fig = figs.source_bars(
        [("occlusion", np.array([0.5, -0.25, 0.0])), ("rollout", np.array([0.2, 0.3, 0.5]))], ["a", "a", "</s>"], "t"
    )
    assert [t.x.tolist() for t in fig.data] == [[0.5, -0.25, 0.0], [0.2, 0.3, 0.5]]
    assert fig.data[0].customdata == ("0: a", "1: a", "2: &lt;/s&gt;")  # repeated tokens stay apart, markup escaped
    assert fig.layout.yaxis.ticktext == ("a", "a", "&lt;/s&gt;") and fig.layout.yaxis.tickvals == (0, 1, 2)
    assert fig.data[0].marker.color == (figs.POSITIVE, figs.NEGATIVE, figs.POSITIVE)
    assert [a.text for a in fig.layout.annotations] == ["occlusion", "rollout"]
    assert fig.layout.xaxis2.anchor == "y2" and fig.layout.title.text == "t"
    with pytest.raises(ValueError, match="rollout"):
        figs.source_bars([("rollout", np.zeros(2))], ["a", "b", "c"])
    with pytest.raises(ValueError):
        figs.source_bars([], ["a"])


@pytest.mark.parametrize(
    "name",
    ["Cross-attention, layer 1, average of heads", "交叉注意力，第 1 层，各头平均"],  # spaces, and Chinese without
)
def test_panel_titles_are_wrapped_to_their_panels(name):
    """Six panels on a 1366 px screen (presentation mode's 18 px text): a long last title ran past the screen's
    edge. Each title is broken into lines no wider than its panel, and the top margin grows with the lines."""
    from viz.tokens import label_px

    panels = [(f"m{i}", np.ones(3)) for i in range(5)] + [(name, np.ones(3))]
    fig = figs.source_bars(panels, ["a", "b", "c"], "t", width_px=1180, tick_px=18)
    lines = fig.layout.annotations[-1].text.split("<br>")
    assert len(lines) >= 2 and "".join(lines).replace(" ", "") == name.replace(" ", "")  # nothing lost
    panel = (fig.layout.xaxis6.domain[1] - fig.layout.xaxis6.domain[0]) * (1180 - fig.layout.margin.l - 10)
    assert all(label_px(line, 18) <= panel for line in lines), (lines, panel)
    single = figs.source_bars(panels[:5], ["a", "b", "c"], "t", width_px=1180, tick_px=18)
    assert fig.layout.margin.t > single.layout.margin.t and fig.layout.height > single.layout.height


def test_score_matrix_signed_and_not():
    scores = np.array([[0.1, -0.3], [0.2, 0.0], [0.0, 0.4]])
    fig = figs.score_matrix(scores, ["x", "y", "</s>"], ["a", "b"], "occ", chosen=1)
    heat = fig.data[0]
    np.testing.assert_allclose(np.asarray(heat.z, dtype=float), scores, atol=1e-7)
    assert heat.colorscale[0][1] != heat.colorscale[-1][1] and heat.zmid == 0 and heat.zmin == -0.4
    assert fig.layout.shapes[0].y0 == 0.5 and fig.layout.shapes[0].y1 == 1.5
    plain = figs.score_matrix(np.abs(scores), ["x", "y", "</s>"], ["a", "b"])
    assert plain.data[0].zmin == 0 and plain.data[0].zmid is None and not plain.layout.shapes
    with pytest.raises(ValueError, match="3 output x 3 source"):
        figs.score_matrix(scores, ["x", "y", "z"], ["a", "b", "c"])


def test_wrapped_chinese_keeps_its_punctuation_with_the_words():
    from viz.tokens import wrap_px

    for width in range(60, 240, 10):
        for text in (
            "注意力展开（rollout）",
            "交叉注意力，第 1 层，各头平均",
            "Cross-attention, layer 1, average of heads",
        ):
            lines = wrap_px(text, width, 18)
            assert "".join(lines).replace(" ", "") == text.replace(" ", "")
            assert not any(line[0] in "，）" for line in lines[1:]), lines  # closing marks never start a line
            assert not any(line[-1] in "（" for line in lines[:-1]), lines  # opening marks never end one
