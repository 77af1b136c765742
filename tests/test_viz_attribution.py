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
