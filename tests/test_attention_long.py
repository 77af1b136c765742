"""The Attention page's views of long inputs (ui/views/attention_long.py, viz/pooled_figs.py): built through the lazy
capture's API (here harness/lazy_adapter.EagerLazy over eager maps, which give the lazy capture's numbers), each view
sends at most about 256 x 256 cells a chart and under 2 MB in all, the pooled map is each block's max or mean
(recomputed here with numpy), the window shows every weight of its positions."""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace

import numpy as np
import plotly.io as pio
import pytest

from harness.lazy_adapter import EagerLazy
from i18n import _
from ui.views import attention_long
from viz.overview_figs import CELL_NOTES
from viz.pooling import MAX_CELLS

PAYLOAD_LIMIT = 2 * 2**20  # bytes of figure JSON one view of the page may send
T = 2000


def causal_softmax(T: int, seed: int = 0) -> np.ndarray:
    """(T, T) rows of a causal softmax: a real decoder map's form (zeros above the diagonal, rows sum to 1)."""
    x = np.random.default_rng(seed).normal(size=(T, T)).astype(np.float32)
    x[np.triu_indices(T, 1)] = -np.inf
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def fake_capture(L: int, H: int, T: int) -> SimpleNamespace:
    """An eager capture of a decoder-only model: every head the same causal map (one array, broadcast)."""
    maps = np.broadcast_to(causal_softmax(T)[None, None], (L, H, T, T))
    tokens = [f"t{i % 97}" for i in range(T)]
    return SimpleNamespace(
        decoder_self=maps,
        encoder_self=np.zeros((0, H, 0, 0), np.float32),
        cross=np.zeros((0, H, T, 0), np.float32),
        source_tokens=[],
        target_tokens=tokens,
        written_tokens=[*tokens[1:], "end"],
    )


def spec_bytes(fig) -> int:
    """What st.plotly_chart sends of a figure: its JSON (plotly writes numpy arrays as base64 typed arrays)."""
    return len(pio.to_json(fig, validate=False).encode())


def cells(fig) -> int:
    """Heatmap cells a figure sends (z of every heatmap trace)."""
    spec = json.loads(pio.to_json(fig, validate=False))
    total = 0
    for trace in spec["data"]:
        z = trace.get("z")
        if isinstance(z, dict):
            total += int(np.prod([int(n) for n in str(z["shape"]).split(",")]))
        elif z is not None:
            total += int(np.asarray(z, dtype=float).size)
    return total


def z_of(trace: dict) -> np.ndarray:
    z = trace["z"]
    if isinstance(z, dict):
        shape = [int(n) for n in str(z["shape"]).split(",")]
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"])).reshape(shape)
    return np.asarray(z, dtype=float)


SIZE = dict(max_height=520, max_width=860, tick_px=14)
LABELS = ("decoder input", "decoder input")


@pytest.fixture(scope="module")
def long_lazy():
    return EagerLazy(fake_capture(2, 12, T))


def view_figures(lazy, view: str, n_layers: int, T: int) -> list:
    rows, keys = attention_long.as_rows(lazy.written_tokens), lazy.target_tokens
    if view == "one":
        return attention_long.one_head(lazy, "decoder_self", 1, 3, "max", (T - 300, T - 1), (0, T - 1), rows,
                                       keys, "Decoder", LABELS, **SIZE)  # fmt: skip
    if view == "average":
        return attention_long.one_head(lazy, "decoder_self", 0, "average", "mean", (0, 63), (0, 63), rows, keys,
                                       "Decoder", LABELS, **SIZE)  # fmt: skip
    if view == "grid":
        return attention_long.head_grid(lazy, "decoder_self", 1, "max", rows, keys, "Decoder", **SIZE)
    if view == "overview":
        return attention_long.overview(lazy, "decoder_self", n_layers, "mean", "first_token", "Decoder")
    return attention_long.sink_view(lazy, "decoder_self", keys, "Decoder")


@pytest.mark.parametrize("view", ["one", "average", "grid", "overview", "sinks"])
def test_every_view_of_a_2000_token_input_sends_under_2_mb_and_at_most_256_by_256_cells_a_chart(long_lazy, view):
    figs = view_figures(long_lazy, view, 2, T)
    assert figs
    sizes = [spec_bytes(f) for f in figs]
    assert sum(sizes) <= PAYLOAD_LIMIT, sizes
    for fig in figs:
        assert cells(fig) <= MAX_CELLS**2 * 1.05, cells(fig)


def test_the_overview_of_144_heads_stays_within_256_by_256_cells():
    lazy = EagerLazy(fake_capture(12, 12, 300))
    summary, thumbs = view_figures(lazy, "overview", 12, 300)
    assert cells(thumbs) <= MAX_CELLS**2 * 1.05
    assert spec_bytes(summary) + spec_bytes(thumbs) <= PAYLOAD_LIMIT


def test_the_pooled_map_is_each_blocks_max_and_mean_and_the_window_every_weight():
    T = 600  # blocks of 3 x 3: 200 a side
    cap = fake_capture(1, 2, T)
    w = np.asarray(cap.decoder_self[0, 1], dtype=np.float64)
    shown = np.where(np.triu(np.ones((T, T), bool), 1), np.nan, w).reshape(200, 3, 200, 3)
    lazy = EagerLazy(cap)
    big, zoom = attention_long.one_head(lazy, "decoder_self", 0, 1, "max", (250, 309), (240, 299),
                                        cap.written_tokens, cap.target_tokens, "D", LABELS, **SIZE)  # fmt: skip
    spec = json.loads(pio.to_json(big, validate=False))["data"][0]
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):  # all-masked blocks: NaN, drawn as masked
        np.testing.assert_allclose(z_of(spec), np.nanmax(shown, axis=(1, 3)), rtol=1e-6)
        mean = np.nanmean(shown, axis=(1, 3))
    custom = spec["customdata"]  # the other pooling, for the hover
    np.testing.assert_allclose(z_of({"z": custom}), mean, rtol=1e-5)
    assert spec["y"][1] == f"3–5: {cap.target_tokens[3][:12]} … {cap.target_tokens[5][:12]}".replace(
        cap.target_tokens[3], cap.written_tokens[3]
    ).replace(cap.target_tokens[5], cap.written_tokens[5])  # the rows a block covers, by position and token
    assert "%{customdata" in spec["hovertemplate"] and "%{z" in spec["hovertemplate"]
    assert _(CELL_NOTES["max"]).format(a=3, b=3) in big.layout.title.text  # the pooling named on the chart
    box = big.layout.shapes[0]  # the window outlined on the pooled map: blocks 83-103 x 80-99
    assert (box.y0, box.y1, box.x0, box.x1) == (82.5, 103.5, 79.5, 99.5)
    z = zoom.data[0]
    got = np.asarray(z.z, dtype=np.float64)
    expected = np.where(np.arange(240, 300)[None, :] > np.arange(250, 310)[:, None], np.nan, w[250:310, 240:300])
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert z.y[0].startswith("250: ") and z.x[0].startswith("240: ")  # positions in the whole input


def test_a_window_is_kept_inside_the_map_and_at_most_256_a_side(long_lazy):
    q, k = attention_long.window_of(long_lazy, "decoder_self", (1990, 5000), (-4, 700))
    assert q == (1990, 1999) and k == (0, MAX_CELLS - 1)


def test_the_average_of_heads_is_the_mean_of_every_heads_rows():
    cap = fake_capture(1, 3, 40)
    cap.decoder_self = np.stack([causal_softmax(40, s) for s in range(3)])[None]  # three different heads
    rows = attention_long.rows_reader(EagerLazy(cap), "decoder_self", 0, "average")(slice(5, 9))
    np.testing.assert_allclose(rows, cap.decoder_self[0, :, 5:9].mean(axis=0), rtol=1e-6)


def test_links_name_a_window_as_two_positions():
    assert attention_long.parse_range("40-103") == (40, 103)
    assert attention_long.range_text((40, 103)) == "40-103"
    with pytest.raises(ValueError):
        attention_long.parse_range("40")


def test_the_heads_of_a_short_input_are_pooled_when_together_they_pass_256_by_256_cells():
    rng = np.random.default_rng(3)
    w = rng.random((4, 200, 200)).astype(np.float32)  # 160,000 cells: each head pooled in blocks of 2 (100 x 100)
    tokens = [f"t{i}" for i in range(200)]
    fig = attention_long.grid_figure(w, tokens, tokens, "L0", None, "mean", **SIZE)
    assert cells(fig) <= MAX_CELLS**2
    spec = json.loads(pio.to_json(fig, validate=False))["data"]
    np.testing.assert_allclose(z_of(spec[2]), w[2].reshape(100, 2, 100, 2).mean(axis=(1, 3)), rtol=1e-5)
    small = attention_long.grid_figure(w[:, :50, :50], tokens[:50], tokens[:50], "L0", None, **SIZE)
    assert cells(small) == 4 * 50 * 50  # few enough: every weight


def test_the_summary_map_colours_the_chosen_summary_and_gives_every_one_in_the_hover():
    from viz import pooled_figs

    rng = np.random.default_rng(5)
    a, b, c = (rng.random((3, 4)).astype(np.float32) for _ in range(3))
    summary = {"first_token": a, "entropy": b, "distance": c}  # "distance": another name of the mean distance
    assert pooled_figs.present_summaries(summary) == ["first_token", "entropy", "mean_distance"]
    fig = pooled_figs.summary_map(summary, "entropy")
    np.testing.assert_allclose(np.asarray(fig.data[0].z, dtype=float), b, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(fig.data[0].customdata)[2, 1], [a[2, 1], b[2, 1], c[2, 1]], rtol=1e-6)
    assert fig.data[0].zmin is None  # entropy is not a share: its own range
    assert pooled_figs.summary_map(summary, "first_token").data[0].zmax == 1.0
    with pytest.raises(ValueError, match="no summary"):
        pooled_figs.summary_map(summary, "diagonal")
