import numpy as np
import pytest

from tests.i18n_helpers import rendered
from viz import inside_figs as figs

KEYS = ["a", "b", "a", "</s>"]


def test_query_keys_rows_and_dimension_axis():
    q, k = np.arange(3.0), np.arange(12.0).reshape(4, 3) - 6
    fig = figs.query_keys(q, k, "b", KEYS)
    np.testing.assert_array_equal(np.array(fig.data[0].z), q[None, :])
    np.testing.assert_array_equal(np.array(fig.data[1].z), k)
    assert list(fig.layout.yaxis2.ticktext) == ["0: a", "1: b", "2: a", "3: &lt;/s&gt;"]  # unique, escaped
    assert list(fig.layout.yaxis.ticktext) == ["q: b"]
    assert fig.layout.xaxis2.title.text == "dimension i"
    assert fig.data[0].zmax == fig.data[1].zmax == 6.0 and fig.data[0].zmid == 0
    with pytest.raises(ValueError, match="4 key vectors but 3 key tokens"):
        figs.query_keys(q, k, "b", KEYS[:3])


@pytest.mark.parametrize("keys", [2, 9, 40])
def test_the_lower_panel_title_has_room_between_the_panels(keys):
    """Presentation mode draws the panel titles 18 px high: the gap between the query row and the key rows holds
    the lower title (about 22 px) with room on both sides, whatever the number of keys."""
    fig = figs.query_keys(np.ones(4), np.ones((keys, 4)), "q", [str(i) for i in range(keys)])
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    gap_px = (fig.layout.yaxis.domain[0] - fig.layout.yaxis2.domain[1]) * plot_px
    assert gap_px >= 2 * 18, gap_px


def test_scores_mark_masked_keys():
    raw = np.array([4.0, -2.0, 1.0, 3.0])
    allowed = np.array([True, True, False, False])
    fig = figs.scores(raw, raw / 2, allowed, KEYS)
    assert [t.name for t in fig.data] == ["q·k_j (raw)", "q·k_j / √d_k (scaled)"]
    np.testing.assert_array_equal(np.array(fig.data[1].y), raw / 2)
    assert list(fig.data[1].text) == ["", "", "masked → −∞", "masked → −∞"]
    assert fig.data[0].marker.color[2] == figs.MASKED_COLOR != fig.data[0].marker.color[0]
    only_raw = figs.scores(raw, None, allowed, KEYS)
    assert len(only_raw.data) == 1 and list(only_raw.data[0].text)[2] == "masked → −∞"
    with pytest.raises(ValueError, match="for 4 key tokens"):
        figs.scores(raw[:3], None, allowed[:3], KEYS)
    mask = figs.mask_row(allowed, KEYS)
    assert mask.data[0].text.tolist() == [["0", "0", "−∞", "−∞"]]
    assert np.isnan(np.array(mask.data[0].z, dtype=float)[0, 2:]).all()


def test_weights_row_with_and_without_the_scale():
    w = np.array([0.5, 0.25, 0.25, 0.0])
    fig = figs.weights_row(w, KEYS)
    assert len(fig.data) == 1 and list(fig.layout.xaxis.ticktext)[3] == "3: &lt;/s&gt;"
    both = figs.weights_row(w, KEYS, unscaled=np.array([0.9, 0.05, 0.05, 0.0]))
    assert [t.name for t in both.data] == ["softmax(q·k_j / √d_k)", "without 1/√d_k"]
    with pytest.raises(ValueError, match="differ"):
        figs.weights_row(w, KEYS, unscaled=np.ones(3))


def test_products_are_coloured_by_sign_and_sum_in_the_title():
    fig = figs.products(np.array([1.5, -0.5, 2.0]), "1: b")
    assert fig.data[0].marker.color[0] != fig.data[0].marker.color[1] == "#1f77b4"
    assert fig.layout.title.text == rendered("q_i · k_i for key {key}: they sum to {total}", key="1: b", total="3.000")


def test_values_and_output_label_each_value_with_its_weight():
    v = np.eye(4, 2)
    fig = figs.values_and_output(v, np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.1, 0.2]), KEYS)
    assert list(fig.layout.yaxis.ticktext)[1] == "1: b · a=0.20"
    np.testing.assert_array_equal(np.array(fig.data[1].z), [[0.1, 0.2]])
    with pytest.raises(ValueError, match="values"):
        figs.values_and_output(v, np.ones(3), np.ones(2), KEYS)


def test_concat_marks_head_boundaries_and_the_chosen_head():
    fig = figs.concat_and_output(np.arange(6.0), np.ones(6), n_heads=3, head=1)
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert sorted(s.x0 for s in lines) == [1.5, 3.5]
    rect = [s for s in fig.layout.shapes if s.type == "rect"][0]
    assert (rect.x0, rect.x1) == (1.5, 3.5)
    with pytest.raises(ValueError, match="H = 4"):
        figs.concat_and_output(np.arange(6.0), np.ones(6), n_heads=4)
    wide = figs.concat_and_output(np.arange(9.0), np.ones(4), n_heads=3)  # T5: H * d_kv = 9 beside d_model = 4
    assert [len(t.z[0]) for t in wide.data] == [9, 4]


def test_cost_figure_and_formatting():
    fig = figs.length_cost([256, 512, 1024], [1, 4, 16], current=512)
    assert fig.layout.xaxis.type == "log" and list(fig.data[0].marker.size) == [8, 14, 8]
    assert figs.format_bytes(402_653_184) == "384.0 MiB" and figs.format_bytes(12) == "12 bytes"
    assert figs.format_count(12_884_901_888) == "12.9 G" and figs.format_count(999) == "999"
    assert figs.matrix(np.eye(3)).data[0].zmax == 1.0


def test_memory_chart_ticks_name_the_units_of_its_labels_and_sit_apart():
    """Issue 21: log ticks in KiB/MiB/GiB as the point labels are (not SI "M"/"G"), one per power of 4, and the lengths
    themselves on x; the labels sit above-left of their points (the line rises to the right)."""
    lengths = [256, 512, 1024, 2048, 4096]
    sizes = [8 * 4 * t * t for t in lengths]  # 8 heads, float32: 2 MiB ... 512 MiB
    fig = figs.length_cost(lengths, sizes, current=1024)
    y = fig.layout.yaxis
    units = {text.split()[-1] for text in fig.data[0].text}
    assert units == {"MiB"} and {t.split()[-1] for t in y.ticktext} <= {"KiB", "MiB", "GiB"}
    assert y.tickmode == "array" and all(np.log10(v) >= y.range[0] and np.log10(v) <= y.range[1] for v in y.tickvals)
    assert np.allclose(np.diff(np.log2(y.tickvals)), 2)  # powers of 4: evenly apart, never crowded
    assert "2 MiB" in y.ticktext or "1 MiB" in y.ticktext
    assert list(fig.layout.xaxis.ticktext) == [str(t) for t in lengths]
    assert fig.data[0].textposition == "top left" and fig.data[0].textfont.size >= 14
