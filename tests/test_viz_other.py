import numpy as np
import pytest

from model.analysis import pe_analysis as pea
from viz import decoding_figs, model_figs, positional_figs


def test_pe_matrix_shows_the_table():
    pe = pea.pe_table(30, 16)
    fig = positional_figs.pe_matrix(pe)
    np.testing.assert_allclose(np.array(fig.data[0].z), pe)
    assert fig.layout.xaxis.title.text == "dimension (2i: sin, 2i+1: cos)" and fig.layout.yaxis.title.text == "position"


def test_sinusoid_curves_name_their_wavelengths():
    pe, lam = pea.pe_table(50, 16), pea.pe_wavelengths(16)
    fig = positional_figs.sinusoid_curves(pe, [0, 3], lam)
    assert [t.name for t in fig.data] == [
        f"dim 0 (sin), wavelength {lam[0]:,.1f}",
        f"dim 3 (cos), wavelength {lam[3]:,.1f}",
    ]
    np.testing.assert_allclose(fig.data[1].y, pe[:, 3])
    with pytest.raises(ValueError, match="dimension 16"):
        positional_figs.sinusoid_curves(pe, [16], lam)


def test_offset_dot_products_do_not_depend_on_the_start():
    pe = pea.pe_table(200, 64)
    dots = pea.offset_dot_products(pe, [0, 20, 100], 50)
    assert dots.shape == (3, 51)
    np.testing.assert_allclose(dots[0], dots[1], atol=1e-9)
    np.testing.assert_allclose(dots[0], dots[2], atol=1e-9)
    assert dots[0, 0] == pytest.approx(32.0)  # d/2 pairs of sin^2 + cos^2
    near_end = pea.offset_dot_products(pe, [190], 50)
    assert np.isnan(near_end[0, 10]) and not np.isnan(near_end[0, 9])
    fig = positional_figs.offset_curves(dots, [0, 20, 100])
    assert [t.name for t in fig.data] == ["p = 0", "p = 20", "p = 100"]


def test_shift_check_is_exact_for_the_sinusoidal_table():
    check = pea.shift_check(100, 32, 10000.0, 7)
    assert check.max_error < 1e-5 and check.matrix.shape == (32, 32)
    # a wrong offset would not map rows onto each other
    wrong = pea.pe_table(120, 32)[:100] @ check.matrix.T
    assert np.abs(wrong - pea.pe_table(120, 32)[8:108]).max() > 0.1


def test_similarity_and_norms():
    pe = pea.pe_table(40, 16)
    sim = pea.similarity(pe)
    assert sim.shape == (40, 40) and np.allclose(np.diag(sim), 8.0)
    np.testing.assert_allclose(pea.row_norms(pe), np.sqrt(8.0))
    fig = positional_figs.embedding_vs_pe(["a", "b"], np.array([3.0, 4.0]), np.array([1.0, 1.0]), "source")
    assert list(fig.layout.xaxis.ticktext) == ["a", "b"] and len(fig.data) == 2
    with pytest.raises(ValueError, match="2 tokens, 3 embedding norms"):
        positional_figs.embedding_vs_pe(["a", "b"], np.ones(3), np.ones(2), "source")


def test_top_k_bars_highlight_the_choice():
    fig = decoding_figs.top_k_bars(["la", " ", "le"], np.array([0.7, 0.2, 0.1]), chosen=1)
    assert list(fig.data[0].y) == ["1. la", "2. ·", "3. le"]
    assert fig.data[0].marker.color[1] != fig.data[0].marker.color[0]
    digits = decoding_figs.top_k_bars(["2", "4", "6"], np.array([0.5, 0.3, 0.2]))
    assert digits.layout.yaxis.type == "category"  # digit tokens stay tokens, not a numeric axis
    with pytest.raises(ValueError, match="2 candidate tokens but 3"):
        decoding_figs.top_k_bars(["a", "b"], np.ones(3))


def test_step_rows_list_every_layer_and_head():
    rows = np.random.default_rng(0).dirichlet(np.ones(5), size=(2, 3))
    fig = decoding_figs.step_rows(rows, list("abcde"), "t")
    assert list(fig.data[0].y) == ["L0 H0", "L0 H1", "L0 H2", "L1 H0", "L1 H1", "L1 H2"]  # categorical rows
    assert fig.layout.yaxis.type == "category" and fig.layout.yaxis.autorange == "reversed"
    assert list(fig.layout.xaxis.ticktext) == list("abcde")
    assert list(fig.data[0].x) == [f"{i}: {t}" for i, t in enumerate("abcde")]  # hover labels, repeats kept apart
    assert fig.data[0].customdata is None and fig.data[0].text is None  # nothing per cell
    np.testing.assert_allclose(np.array(fig.data[0].z)[4], rows[1, 1], rtol=1e-6)


def test_decoding_charts_take_the_presentation_text_size_and_wrap_a_long_title():
    rows = np.random.default_rng(0).dirichlet(np.ones(5), size=(2, 3))
    title = "Cross-attention of the new position over the source"
    wide = decoding_figs.step_rows(rows, list("abcde"), title, width_px=560)
    narrow = decoding_figs.step_rows(rows, list("abcde"), title, width_px=200, tick_px=18)
    assert wide.layout.title.text == title and wide.layout.xaxis.tickfont.size == 14
    assert narrow.layout.title.text.replace("<br>", " ") == title and narrow.layout.title.text.count("<br>") == 1
    assert narrow.layout.xaxis.tickfont.size == narrow.layout.yaxis.tickfont.size == 18
    assert narrow.layout.margin.t > wide.layout.margin.t  # room for the second line of the title
    bars = decoding_figs.top_k_bars(["la", "le"], np.array([0.7, 0.3]), tick_px=18)
    assert bars.layout.yaxis.tickfont.size == 18 and bars.data[0].textfont.size == 18
    assert bars.data[0].textposition == "outside" and bars.data[0].textfont.color == "#222222"  # dark, never shrunk
    assert decoding_figs.wrap_title("short", 100, 14) == "short"


def test_model_figures():
    fig = model_figs.parameter_bars({"src_embed": 300, "encoder.layers.0": 700})
    assert list(fig.data[0].y) == ["src_embed", "encoder.layers.0"] and "1,000 in all" in fig.layout.title.text
    fig = model_figs.weight_spread(["a", "b"], [0.1, 0.2], [1.0, 2.0])
    assert len(fig.data) == 2


def test_step_rows_label_every_head_and_stay_within_a_screen():
    """Issue 21: plotly's own ticks labelled every other head (L0 H0, L0 H2...); every row is labelled, each row as
    tall as its label; a model of 48 heads is thinned to every n-th label instead of a chart taller than a screen."""
    rows = np.random.default_rng(1).dirichlet(np.ones(4), size=(2, 4))  # (L, H, Tk)
    fig = decoding_figs.step_rows(rows, list("abcd"), "t", tick_px=18)
    names = [f"L{layer} H{h}" for layer in range(2) for h in range(4)]
    assert list(fig.layout.yaxis.ticktext) == names and list(fig.layout.yaxis.tickvals) == names
    assert fig.layout.height >= 8 * (18 + 6)  # a row per head, as tall as an 18 px label and its gap
    big = decoding_figs.step_rows(
        np.random.default_rng(2).dirichlet(np.ones(4), size=(6, 8)), list("abcd"), "t", tick_px=18
    )
    shown = list(big.layout.yaxis.ticktext)
    assert big.layout.height <= 700 and 1 < len(shown) < 48 and shown[0] == "L0 H0"
    rows_px = (big.layout.height - big.layout.margin.t - 50) / 48
    assert rows_px * (48 / len(shown)) >= 18  # the labels shown are at least a label's height apart


def test_the_chosen_candidate_is_outlined_so_a_tiny_probability_shows():
    bars = decoding_figs.top_k_bars(["a", "b", "c"], np.array([0.95, 0.04, 0.001]), chosen=2)
    assert (
        list(bars.data[0].marker.line.width) == [0, 0, 4]
        and bars.data[0].marker.color[2] != bars.data[0].marker.color[0]
    )


def test_ensure_readable_brings_every_text_to_the_size_and_leaves_what_is_right():
    """Issue 21: every chart's ticks, colour bars, legend, titles and notes dark and at least the mode's size (the
    Inside page's ticks were grey 12 px), changing only what is not yet so (cheap on a 48-panel overview)."""
    import plotly.graph_objects as go

    from viz.tokens import TICK_COLOR, ensure_readable

    fig = go.Figure(go.Heatmap(z=[[1, 2], [3, 4]]), layout=dict(title="t", xaxis_title="x", legend_title="l"))
    fig.add_annotation(text="note", x=0, y=0)
    fig.update_layout(yaxis=dict(tickfont=dict(size=24, color="#000000")))  # larger already: stays
    ensure_readable(fig, 18)
    layout = fig.layout
    assert layout.xaxis.tickfont.size == 18 and layout.xaxis.tickfont.color == TICK_COLOR
    assert layout.yaxis.tickfont.size == 24 and layout.yaxis.tickfont.color == "#000000"
    assert layout.xaxis.title.font.size == 18 and layout.title.font.size == 21 and layout.legend.font.size == 18
    assert layout.annotations[0].font.size == 18 and fig.data[0].colorbar.tickfont.size == 18
    shared = go.Figure(go.Heatmap(z=[[1]], coloraxis="coloraxis"), layout=dict(coloraxis=dict(colorscale="Blues")))
    ensure_readable(shared, 14)
    assert shared.layout.coloraxis.colorbar.tickfont.size == 14 and shared.data[0].colorbar.tickfont.size is None


def test_ensure_readable_reaches_colour_bar_titles_log_axes_and_bar_text():
    """Issue 34: colour-bar titles were grey, log axes labelled their 2s and 5s at 3/4 of the size, and text on bars
    shrank to its bar; each is brought to the mode's size and dark, what was set already stays."""
    import plotly.graph_objects as go

    from viz.tokens import TEXT_COLOR, ensure_readable

    fig = go.Figure(go.Heatmap(z=[[1, 2]], colorbar=dict(title=dict(text="weight"))))
    fig.update_yaxes(type="log")
    ensure_readable(fig, 18)
    assert fig.data[0].colorbar.title.font.size == 18 and fig.data[0].colorbar.title.font.color == TEXT_COLOR
    assert fig.layout.yaxis.dtick == 1 and fig.layout.xaxis.dtick is None  # only the log axis
    shared = go.Figure(go.Heatmap(z=[[1]], coloraxis="coloraxis"), layout=dict(coloraxis_colorbar_title_text="w"))
    ensure_readable(shared, 14)
    assert shared.layout.coloraxis.colorbar.title.font.size == 14
    bars = go.Figure(go.Bar(x=[1, 2], y=["a", "b"], text=["1", "2"]))
    ensure_readable(bars, 18)
    assert bars.layout.uniformtext.minsize == 18 and bars.layout.uniformtext.mode == "show"
    kept = go.Figure(go.Scatter(x=[1, 10]), layout=dict(yaxis=dict(type="log", dtick="D2")))
    ensure_readable(kept, 18)
    assert kept.layout.yaxis.dtick == "D2" and kept.layout.uniformtext.minsize is None  # no text trace


def test_ensure_readable_reaches_marker_colour_bars_and_text_beside_bars():
    import plotly.graph_objects as go

    from viz.tokens import TEXT_COLOR, TICK_COLOR, ensure_readable

    fig = go.Figure(
        go.Scatter(
            x=[0, 1],
            y=[0, 1],
            mode="markers",
            marker=dict(color=[0, 1], showscale=True, colorbar=dict(title_text="position")),
        )
    )
    fig.add_bar(x=[1, 2], y=["a", "b"], orientation="h", text=["1", "2"])
    ensure_readable(fig, 18)
    bar = fig.data[0].marker.colorbar
    assert bar.tickfont.size == 18 and bar.tickfont.color == TICK_COLOR and bar.title.font.color == TEXT_COLOR
    assert fig.data[1].outsidetextfont.size == 18 and fig.data[1].outsidetextfont.color == TEXT_COLOR
