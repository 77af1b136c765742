import base64
import json

import numpy as np
import pytest

from viz import attention_figs as figs
from viz import overview_figs
from viz.tokens import display_token, indexed


def softmax_rows(shape, seed=0):
    x = np.random.default_rng(seed).normal(size=shape)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_heatmap_labels_axes_with_the_tokens_and_keeps_repeats_apart():
    q, k = ["<s>", "la", "la", "rouge"], ["the", "red", "red", "car", "</s>"]
    w = softmax_rows((4, 5))
    fig = figs.attention_heatmap(w, q, k, "title", query_label="decoder input", key_label="source")
    assert list(fig.layout.xaxis.ticktext) == ["the", "red", "red", "car", "&lt;/s&gt;"]
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2, 3, 4]
    assert list(fig.layout.yaxis.ticktext) == ["&lt;s&gt;", "la", "la", "rouge"]
    assert list(fig.layout.yaxis.range) == [3.5, -0.5]  # first query on top, exactly the cells shown
    assert "source" in fig.layout.xaxis.title.text and "decoder input" in fig.layout.yaxis.title.text
    np.testing.assert_allclose(np.array(fig.data[0].z, dtype=float), w, rtol=1e-6)
    # hover: one template reading the cell's labels from the categorical axes, "i: token" so repeats stay apart
    assert list(fig.data[0].x) == ["0: the", "1: red", "2: red", "3: car", "4: &lt;/s&gt;"]
    assert list(fig.data[0].y) == ["0: &lt;s&gt;", "1: la", "2: la", "3: rouge"]
    assert fig.layout.xaxis.type == "category" and fig.layout.yaxis.type == "category"
    assert fig.data[0].hovertemplate == "query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>"


def test_masked_cells_are_drawn_as_masked_not_as_zero():
    toks = ["<s>", "a", "b"]
    w = np.tril(softmax_rows((3, 3)))
    fig = figs.attention_heatmap(w, toks, toks, mask=figs.causal_mask(3, 3))
    z = np.array(fig.data[0].z, dtype=float)
    assert np.isnan(z[0, 1]) and np.isnan(z[0, 2]) and np.isnan(z[1, 2])
    assert not np.isnan(z[2, 0])
    np.testing.assert_allclose(z[~figs.causal_mask(3, 3)], w[~figs.causal_mask(3, 3)], rtol=1e-6)  # the rest as given
    assert fig.data[0].hoverongaps is False  # a masked cell has no hover: it holds no weight
    assert fig.layout.plot_bgcolor == figs.MASKED_COLOR  # NaN cells are not drawn: the grey background shows


def test_mismatches_are_named():
    w = softmax_rows((3, 4))
    with pytest.raises(ValueError, match="3 query rows but there are 2 query tokens"):
        figs.attention_heatmap(w, ["a", "b"], list("abcd"))
    with pytest.raises(ValueError, match="4 key columns but there are 5 key tokens"):
        figs.attention_heatmap(w, list("abc"), list("abcde"))
    with pytest.raises(ValueError, match="mask shape"):
        figs.attention_heatmap(w, list("abc"), list("abcd"), mask=np.zeros((3, 3), bool))


def test_head_grid_has_one_panel_per_head():
    w = softmax_rows((6, 3, 4))
    fig = figs.head_grid(w, list("abc"), list("wxyz"), columns=4)
    assert len(fig.data) == 6
    assert [a.text for a in fig.layout.annotations] == [f"head {h}" for h in range(6)]
    np.testing.assert_allclose(np.array(fig.data[5].z, dtype=float), w[5], rtol=1e-6)
    assert {t.coloraxis for t in fig.data} == {"coloraxis"}  # one shared colour axis and bar
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0, 1)
    assert "head 5" in fig.data[5].hovertemplate


def test_overview_is_layers_by_heads():
    """One trace on one pair of axes: layer l, head h is the tile at rows l·(q+1).., columns h·(k+1)..; the rows
    and columns between tiles are blank (NaN) and covered white."""
    w = softmax_rows((3, 4, 5, 6))
    fig = overview_figs.layer_head_overview(w)
    assert len(fig.data) == 1
    z = np.array(fig.data[0].z, dtype=float)
    assert z.shape == (3 * 6 - 1, 4 * 7 - 1)
    for layer in range(3):
        for h in range(4):
            np.testing.assert_allclose(z[layer * 6 : layer * 6 + 5, h * 7 : h * 7 + 6], w[layer, h], rtol=1e-6)
    assert np.isnan(z[5]).all() and np.isnan(z[:, 6]).all()  # the blank row after layer 0, column after head 0
    blank = {(s.xref, s.x0 + 0.5) for s in fig.layout.shapes if s.xref == "x"}
    assert blank == {("x", 6), ("x", 13), ("x", 20)} and all(s.fillcolor == "white" for s in fig.layout.shapes)
    assert len([s for s in fig.layout.shapes if s.yref == "y"]) == 2
    texts = {a.text for a in fig.layout.annotations}
    assert {"layer 0", "layer 2", "head 0", "head 3"} <= texts
    assert fig.data[0].y[2 * 6 + 1] == "layer 2, query 1" and fig.data[0].x[1 * 7 + 4] == "head 1, key 4"
    assert len(set(fig.data[0].x)) == len(fig.data[0].x) and len(set(fig.data[0].y)) == len(fig.data[0].y)
    assert fig.data[0].coloraxis == "coloraxis" and fig.data[0].hoverongaps is False
    dark = {a.font.color for a in fig.layout.annotations} | {
        overview_figs.layer_head_overview(w, "T").layout.title.font.color
    }
    assert dark == {figs.TEXT_COLOR}  # titles dark, not the theme's grey


@pytest.mark.parametrize("build", ["heatmap", "grid", "overview"])
def test_figures_go_out_as_typed_arrays_without_per_cell_strings(build):
    """What the browser gets: float32 typed arrays (base64), and text that grows with tokens, not with cells."""
    n = 48
    toks = [f"tok{i}" for i in range(n)]
    w = softmax_rows((2, 3, n, n)).astype(np.float64)
    fig = {
        "heatmap": lambda: figs.attention_heatmap(w[0, 0], toks, toks, mask=figs.causal_mask(n, n)),
        "grid": lambda: figs.head_grid(w[0], toks, toks),
        "overview": lambda: overview_figs.layer_head_overview(w),
    }[build]()
    spec = json.loads(fig.to_json())
    spec["data"] = [t for t in spec["data"] if t["type"] == "heatmap"]  # not the legend's marker for masked cells
    for trace in spec["data"]:
        assert trace["z"]["dtype"] == "f4" and "bdata" in trace["z"]  # float32, base64: 4 bytes a cell
        assert "customdata" not in trace and "text" not in trace and "hovertext" not in trace
        assert trace["coloraxis"] == "coloraxis"
    z = spec["data"][0]["z"]
    shape = (2 * (n + 1) - 1, 3 * (n + 1) - 1) if build == "overview" else (n, n)  # tiles: layers x heads
    decoded = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.float32).reshape(shape)[:n, :n]
    expected = np.where(figs.causal_mask(n, n), np.nan, w[0, 0]) if build == "heatmap" else w[0, 0]
    np.testing.assert_allclose(decoded, expected, rtol=1e-6)  # the same numbers, masked cells NaN
    cells = sum(np.prod(shape) if build == "overview" else n * n for _ in spec["data"])
    assert len(fig.to_json()) < cells * 4 * 4 / 3 + 60_000  # the base64 arrays plus a small, cell-independent rest


def test_head_average():
    w = softmax_rows((4, 3, 3))
    np.testing.assert_allclose(figs.head_average(w), w.mean(0))
    np.testing.assert_allclose(figs.head_average(w).sum(-1), 1)


def test_cells_are_square_and_the_height_follows_the_rows():
    """Height from the number of rows (not the larger side); long inputs thin their ticks, never shrink them."""
    short = figs.attention_heatmap(softmax_rows((5, 5)), list("abcde"), list("abcde"))
    wide = figs.attention_heatmap(softmax_rows((11, 31)), list("abcdefghijk"), list("x" * 31))
    tall = figs.attention_heatmap(softmax_rows((31, 11)), list("x" * 31), list("abcdefghijk"))
    assert wide.layout.height < tall.layout.height  # 11 rows make a lower chart than 31 rows
    assert wide.layout.xaxis.scaleanchor == "y" and wide.layout.xaxis.constrain == "domain"  # square cells
    n = 120
    toks = [f"t{i}" for i in range(n)]
    long = figs.attention_heatmap(softmax_rows((n, n)), toks, toks)
    assert long.layout.height <= figs.MAX_HEIGHT and short.layout.height <= figs.MAX_HEIGHT
    assert long.layout.xaxis.tickfont.size == short.layout.xaxis.tickfont.size >= 14  # never smaller
    assert 1 < len(long.layout.xaxis.tickvals) < n and list(long.layout.xaxis.tickvals)[:2] == [
        0,
        long.layout.xaxis.tickvals[1],
    ]
    geo = figs.heatmap_geometry(toks, toks)
    assert geo.cell * geo.y.step >= 20 and geo.cell * geo.x.step >= 20  # labels at least 20 px apart
    assert long.layout.xaxis.tickfont.color == "#222222"  # dark: 15.9:1 on white


def test_single_characters_are_never_rotated():
    chars = list("abcdefghijklmnopqrstabcdefghijklmnopqrst") + ["</s>"]
    for n in (5, 12, 41):
        fig = figs.attention_heatmap(softmax_rows((n, n)), chars[-n:], chars[-n:])
        assert fig.layout.xaxis.tickangle == 0
    words = ["voiture", "rouge", "petit", "chien"] * 8
    fig = figs.attention_heatmap(softmax_rows((32, 32)), words, words)
    assert fig.layout.xaxis.tickangle == -90  # words that would overlap side by side stand up


def test_gold_alignment_and_masked_cells_are_in_the_legend():
    w = softmax_rows((3, 4))
    fig = figs.attention_heatmap(w, ["<s>", "x", "y"], list("abc") + ["</s>"], gold=[(0, 1), (2, 0), (9, 9)])
    gold = [t for t in fig.data if t.type == "scatter"]
    assert len(gold) == 1 and "gold" in gold[0].name and fig.layout.showlegend
    assert list(gold[0].x) == ["0: a", "2: c"] and list(gold[0].y) == [
        "1: x",
        "0: &lt;s&gt;",
    ]  # (src, tgt) pairs in range
    masked = figs.attention_heatmap(softmax_rows((3, 3)), list("abc"), list("abc"), mask=figs.causal_mask(3, 3))
    assert [t.name for t in masked.data if t.type == "scatter"] == ["masked (weight 0, not attended)"]
    assert figs.attention_heatmap(w, list("abc"), list("abcd")).layout.showlegend is False


def test_token_display():
    assert display_token(" ") == "·" and display_token("") == "∅"
    assert display_token("</s>") == "&lt;/s&gt;" and display_token("a&b") == "a&amp;b"
    assert display_token("x" * 30).endswith("…") and len(display_token("x" * 30)) == 16
    assert indexed(["a", "a"]) == ["0: a", "1: a"]


def test_block_mean_keeps_small_maps_and_averages_long_ones_without_masked_cells():
    w = softmax_rows((2, 3, 5, 7))
    same, a, b = overview_figs.block_mean(w, None, max_cells=8)
    assert (a, b) == (1, 1) and same.dtype == np.float32
    np.testing.assert_allclose(same, w, rtol=1e-6)

    w = softmax_rows((1, 2, 10, 9))
    mask = figs.causal_mask(10, 9)
    got, a, b = overview_figs.block_mean(w, mask, max_cells=4)
    assert (a, b) == (3, 3) and got.shape == (1, 2, 4, 3)
    keep = np.where(mask, np.nan, w)
    # block (row 1, col 0) holds queries 3..5, keys 0..2: all visible
    np.testing.assert_allclose(got[0, 1, 1, 0], keep[0, 1, 3:6, 0:3].mean(), rtol=1e-6)
    # block (row 0, col 2) holds queries 0..2, keys 6..8: every cell is masked (keys after the query)
    assert np.isnan(got[0, 0, 0, 2])
    # block (row 2, col 2) holds queries 6..8, keys 6..8: the mean of the visible lower triangle only
    np.testing.assert_allclose(got[0, 0, 2, 2], np.nanmean(keep[0, 0, 6:9, 6:9]), rtol=1e-6)
    # the last row block has one query (9) padded out, not averaged with zeros
    np.testing.assert_allclose(got[0, 0, 3, 0], keep[0, 0, 9, 0:3].mean(), rtol=1e-6)


def test_overview_of_a_long_input_sends_thumbnails_and_says_so():
    n = 200
    w = softmax_rows((2, 2, n, n))
    fig = overview_figs.layer_head_overview(w, "Encoder self-attention")
    z = np.array(fig.data[0].z, dtype=float)
    assert z.shape == (2 * 41 - 1, 2 * 41 - 1)  # tiles of 40 x 40: blocks of 5 (200 / 48 rounded up)
    assert "mean of 5 × 5 positions" in fig.layout.title.text
    assert "mean weight" in fig.data[0].hovertemplate
    assert fig.data[0].y[41 + 1] == "layer 1, queries 5–9" and fig.data[0].x[39] == "head 0, keys 195–199"
    np.testing.assert_allclose(z[0, 0], w[0, 0, :5, :5].mean(), rtol=1e-5)
    np.testing.assert_allclose(z[41, 41], w[1, 1, :5, :5].mean(), rtol=1e-5)
    assert len(fig.to_json()) < 200_000  # 4 thumbnails of 40 x 40 float32, not 4 maps of 200 x 200


def test_head_grid_takes_fewer_columns_for_wide_inputs():
    """A wide map (11 x 31) in four columns would make tiny cells: two columns of two rows keep them larger."""
    wide = figs.head_grid(softmax_rows((4, 11, 31)), list("abcdefghijk"), list("x" * 31))
    square = figs.head_grid(softmax_rows((4, 8, 8)), list("abcdefgh"), list("abcdefgh"))

    def grid(fig) -> tuple[int, int]:  # (rows, columns): the distinct vertical and horizontal panel positions
        axes = fig.to_plotly_json()["layout"]
        rows = {tuple(v["domain"]) for k, v in axes.items() if k.startswith("yaxis")}
        return len(rows), len({tuple(v["domain"]) for k, v in axes.items() if k.startswith("xaxis")})

    assert grid(wide) == (2, 2) and grid(square) == (1, 4)
    assert wide.layout.height <= figs.MAX_HEIGHT and square.layout.height <= figs.MAX_HEIGHT


def test_wide_special_labels_among_characters_widen_the_cells_a_little_rather_than_drop_labels():
    q, k = ["<s>", *"dbbbbbbbbbc"], [*"cafe", "<unk>", "<unk>", "</s>"]
    fig = figs.attention_heatmap(softmax_rows((len(q), len(k))), q, k)
    assert list(fig.layout.xaxis.ticktext) == ["c", "a", "f", "e", "&lt;unk&gt;", "&lt;unk&gt;", "&lt;/s&gt;"]
    assert fig.layout.xaxis.tickangle == 0 and 1 < fig.layout.xaxis.scaleratio <= 1.6  # roughly square


def test_a_tall_map_of_few_columns_labels_every_column():
    """60 output rows over 9 source characters: rows thin their labels, the 9 columns keep every one (wider cells)."""
    q, k = ["<s>", *("j" * 59)], [*"abcdefgh", "</s>"]
    fig = figs.attention_heatmap(softmax_rows((len(q), len(k))), q, k, tick_px=18, max_height=470, max_width=1180)
    assert len(fig.layout.xaxis.ticktext) == len(k) and fig.layout.xaxis.tickangle == 0
    assert len(fig.layout.yaxis.ticktext) < len(q)  # the rows: every n-th label
    assert fig.layout.height <= 470 + figs.LEGEND_PX


def test_all_heads_label_every_one_of_nine_tokens_beside_the_sidebar():
    """Issue 21: a grid of 4 heads over 9 tokens ("stressed" and </s>) labelled every other token though all fit."""
    from viz.attention_figs import head_grid

    tokens = [*"stressed", "</s>"]
    weights = np.random.default_rng(0).dirichlet(np.ones(9), size=(4, 9))
    fig = head_grid(weights, tokens, tokens, "t", max_height=520, max_width=860, tick_px=14)
    assert [t.replace("&lt;", "<").replace("&gt;", ">") for t in fig.layout.xaxis.ticktext] == tokens


def test_overview_layer_titles_sit_level_left_of_their_rows():
    """Issue 21: the layer titles stood turned at the right edge, running into the panels; now level, left of the
    rows, with a margin as wide as the longest at the presentation size."""
    fig = overview_figs.layer_head_overview(np.random.default_rng(0).random((3, 2, 4, 4)))
    rows = [a for a in fig.layout.annotations if a.text.startswith("layer")]
    assert [a.text for a in rows] == ["layer 0", "layer 1", "layer 2"]
    assert all(a.x == 0 and a.xanchor == "right" and a.textangle == 0 for a in rows)
    assert fig.layout.margin.l >= 50
