"""Every layer x head of one kind of attention at a glance: small thumbnails, rows are layers, columns heads.

Long inputs are drawn as means over blocks of tokens (block_mean), so the overview stays small whatever the length;
one head's full map is attention_figs.attention_heatmap.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from i18n import N_, _

from .attention_figs import MASKED_COLOR, _coloraxis, _z
from .pooling import Pooled, panel_cells
from .tokens import FONTS, TEXT_COLOR, TICK_PX, label_px

THUMBNAIL_CELLS = 48  # most cells along each side of an overview thumbnail (about 150 px tall on screen)
CELL_NOTES = {  # what one cell of a pooled map is, for its title (marked only: translated where shown)
    "max": N_(" (each cell: the max of {a} × {b} positions)"),
    "mean": N_(" (each cell: the mean of {a} × {b} positions)"),
}
TILE_LABELS = 4  # key positions numbered under each tile by numbered_tiles (every ceil(Tk / TILE_LABELS)-th)


def block_mean(
    weights: np.ndarray, mask: np.ndarray | None, max_cells: int = THUMBNAIL_CELLS
) -> tuple[np.ndarray, int, int]:
    """(..., Tq, Tk) -> (..., ceil(Tq/a), ceil(Tk/b)) means over blocks of a x b cells, with a and b the smallest
    block sides that leave at most max_cells per axis (1 x 1 when the map is small: the weights unchanged).

    Masked cells are left out of each block's mean; a block with nothing but masked cells is NaN (drawn grey).
    Returns (the block means as float32, a, b).
    """
    Tq, Tk = weights.shape[-2:]
    a, b = -(-Tq // max_cells), -(-Tk // max_cells)
    z = _z(weights, None if mask is None else np.broadcast_to(mask, weights.shape)).astype(np.float64)
    if a == 1 and b == 1:
        return z.astype(np.float32), 1, 1
    pad_q, pad_k = -Tq % a, -Tk % b
    z = np.pad(z, [(0, 0)] * (z.ndim - 2) + [(0, pad_q), (0, pad_k)], constant_values=np.nan)
    blocks = z.reshape(*z.shape[:-2], (Tq + pad_q) // a, a, (Tk + pad_k) // b, b)  # (..., Tq/a, a, Tk/b, b)
    seen = np.isfinite(blocks).sum(axis=(-3, -1))
    total = np.nansum(blocks, axis=(-3, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(seen > 0, total / np.maximum(seen, 1), np.nan).astype(np.float32), a, b


def tile(z: np.ndarray) -> np.ndarray:
    """(L, H, q, k) -> one (L·(q+1) − 1, H·(k+1) − 1) map: layer l, head h at rows l·(q+1).., columns h·(k+1)..,
    one NaN row and column between neighbours (drawn white, see layer_head_overview)."""
    L, H, q, k = z.shape
    out = np.full((L * (q + 1) - 1, H * (k + 1) - 1), np.nan, dtype=np.float32)
    for layer in range(L):
        for h in range(H):
            out[layer * (q + 1) : layer * (q + 1) + q, h * (k + 1) : h * (k + 1) + k] = z[layer, h]
    return out


def _labels(n_tiles: int, cells: int, block: int, total: int, one: str, many: str, tile_key: str) -> list[str]:
    """The category of every row (or column) of a tiled map: '<tile>, <position or positions>', and unique blank
    ones for the gaps (never hovered: hoverongaps is off)."""
    out = []
    for t in range(n_tiles):
        for c in range(cells):
            lo = c * block
            hi = min(lo + block, total) - 1
            text = (
                one.format(**{tile_key: t, "i": lo}) if block == 1 else many.format(**{tile_key: t, "i": lo, "j": hi})
            )
            out.append(text)
        if t < n_tiles - 1:
            out.append(" " * (t + 1))
    return out


def layer_head_overview(
    weights: np.ndarray,
    title: str = "",
    mask: np.ndarray | None = None,
    max_cells: int | None = None,
    layer_names: list[str] | None = None,
) -> go.Figure:
    """Every layer x head, (L, H, Tq, Tk), as small thumbnails: rows are layers, columns are heads. mask: (Tq, Tk)
    or per layer (L, 1, Tq, Tk) (a local layer's sliding window); layer_names: the rows' names (default "layer i").

    One heatmap trace on one pair of axes (a tile per layer and head, white lines between them): a panel per head
    made plotly lay out L x H axes, most of the chart's drawing time. A thumbnail has at most `max_cells` cells a
    side: longer inputs are shown as means over blocks of tokens (the hover and the subtitle say so), which keeps
    the page small; one head's view has every weight.
    """
    if weights.ndim != 4:
        raise ValueError(f"weights must be (layers, heads, queries, keys), got shape {weights.shape}")
    if max_cells is None:  # THUMBNAIL_CELLS, fewer when there are many heads: about 256 x 256 cells in all
        max_cells = min(THUMBNAIL_CELLS, panel_cells(weights.shape[0] * weights.shape[1]))
    z, a, b = block_mean(weights, mask, max_cells)
    return tiled_overview(z, (a, b), weights.shape[-2:], title, layer_names=layer_names)


def pooled_overview(pooled: Pooled, how: str, title: str = "", layer_names: list[str] | None = None) -> go.Figure:
    """layer_head_overview of thumbnails pooled already (viz/pooling.pool_rows of each head, (L, H, q, k)): the
    overview of a long input, whose maps are never held together. how: the pooling the colours show."""
    if pooled.of(how).ndim != 4:
        raise ValueError(f"thumbnails must be (layers, heads, queries, keys), got shape {pooled.of(how).shape}")
    return tiled_overview(pooled.of(how), pooled.blocks, pooled.shape, title, how, layer_names)


def tiled_overview(
    z: np.ndarray,
    blocks: tuple[int, int],
    lengths: tuple[int, int],
    title: str = "",
    how: str = "mean",
    layer_names: list[str] | None = None,
) -> go.Figure:
    """The overview of (L, H, q, k) thumbnails, each cell `how` ("mean" or "max") over a block of blocks[0] x
    blocks[1] positions of a (Tq, Tk) = lengths map; layer_names: the rows' names (default "layer i")."""
    L, H = z.shape[:2]
    (a, b), (Tq, Tk) = blocks, lengths
    q, k = z.shape[-2:]
    if a == 1 and b == 1:
        what, weight = "", _("weight %{z:.3f}")
    else:
        what = _(CELL_NOTES[how]).format(a=a, b=b)
        weight = _("max weight %{z:.3f}") if how == "max" else _("mean weight %{z:.3f}")
    rows = _labels(L, q, a, Tq, _("layer {layer}, query {i}"), _("layer {layer}, queries {i}–{j}"), "layer")
    cols = _labels(H, k, b, Tk, _("head {h}, key {i}"), _("head {h}, keys {i}–{j}"), "h")
    trace = dict(  # a plain dict: go.Figure validates it once
        type="heatmap",
        z=tile(z),
        x=cols,
        y=rows,
        coloraxis="coloraxis",
        hoverongaps=False,
        hovertemplate=f"%{{y}}<br>%{{x}}<br>{weight}<extra></extra>",
    )
    title = f"{title}{what}" if title else what.strip(" ()")
    note = dict(showarrow=False, font=dict(color=TEXT_COLOR, size=16))
    heads = [
        dict(
            text=_("head {h}").format(h=h),
            x=h * (k + 1) + (k - 1) / 2,
            xref="x",
            y=1,
            yref="paper",
            yanchor="bottom",
            **note,
        )
        for h in range(H)
    ]
    layers = [
        dict(
            text=_("layer {i}").format(i=i) if layer_names is None else layer_names[i],
            x=0,
            xref="paper",
            xanchor="right",
            xshift=-12,
            textangle=0,
            y=i * (q + 1) + (q - 1) / 2,
            yref="y",
            **note,
        )
        for i in range(L)
    ]
    row_px = max((label_px(n["text"], 18) for n in layers), default=0.0)  # room for them at the presentation size
    white = dict(type="rect", fillcolor="white", line=dict(width=0), layer="above")
    gaps = [dict(x0=g - 0.5, x1=g + 0.5, xref="x", y0=0, y1=1, yref="paper", **white) for g in gap_cells(H, k)] + [
        dict(y0=g - 0.5, y1=g + 0.5, yref="y", x0=0, x1=1, xref="paper", **white) for g in gap_cells(L, q)
    ]
    axis = dict(type="category", showticklabels=False, ticks="", showgrid=False, zeroline=False)
    layout = dict(
        title=dict(text=title, font=dict(color=TEXT_COLOR)),
        xaxis=dict(axis, range=[-0.5, len(cols) - 0.5]),
        yaxis=dict(axis, range=[len(rows) - 0.5, -0.5]),
        annotations=heads + layers,
        shapes=gaps,
        height=max(300, 150 * L + 100),
        plot_bgcolor=MASKED_COLOR,
        coloraxis=_coloraxis(),
        margin=dict(l=int(row_px) + 24, r=40, t=80, b=10, pad=0),  # see MASKED_COLOR
        **FONTS,
    )
    return go.Figure(data=[trace], layout=layout)  # built once: see attention_heatmap


def gap_cells(n_tiles: int, cells: int) -> list[int]:
    """The indices of the blank rows (or columns) between n_tiles tiles of `cells` each."""
    return [t * (cells + 1) - 1 for t in range(1, n_tiles)]


def numbered_tiles(fig: go.Figure, Tk: int, H: int) -> go.Figure:
    """An overview of Tk keys a tile (layer_head_overview) with key position numbers (dark, TICK_PX) under every one
    of its H heads' tiles, every ceil(Tk / TILE_LABELS)-th: the lecture pack's (the figure carries TILE_LABELS:
    pack_live.js numbers a typed input's tiles by it)."""
    every = -(-Tk // TILE_LABELS)
    vals = [h * (Tk + 1) + p for h in range(H) for p in range(0, Tk, every)]
    fig.update_layout(meta={**(fig.layout.meta or {}), "tile_labels": TILE_LABELS})
    return fig.update_xaxes(
        showticklabels=True,
        tickmode="array",
        tickvals=vals,
        ticktext=[str(v % (Tk + 1)) for v in vals],
        tickfont=dict(size=TICK_PX, color=TEXT_COLOR),
        ticks="outside",
        ticklen=3,
        automargin=True,
    )
