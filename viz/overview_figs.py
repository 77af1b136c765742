"""Every layer x head of one kind of attention at a glance: small thumbnails, rows are layers, columns heads.

Long inputs are drawn as means over blocks of tokens (block_mean), so the overview stays small whatever the length;
one head's full map is attention_figs.attention_heatmap.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from i18n import _

from .attention_figs import MASKED_COLOR, _coloraxis, _z
from .subplot_grid import axis_suffix, grid_layout
from .tokens import FONTS, TEXT_COLOR, label_px

THUMBNAIL_CELLS = 48  # most cells along each side of an overview thumbnail (about 150 px tall on screen)


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


def layer_head_overview(weights: np.ndarray, title: str = "", mask: np.ndarray | None = None) -> go.Figure:
    """Every layer x head, (L, H, Tq, Tk), as small thumbnails: rows are layers, columns are heads.

    A thumbnail has at most THUMBNAIL_CELLS cells a side: longer inputs are shown as means over blocks of
    tokens (the hover and the subtitle say so), which keeps the page small; one head's view has every weight.
    """
    if weights.ndim != 4:
        raise ValueError(f"weights must be (layers, heads, queries, keys), got shape {weights.shape}")
    L, H, Tq, Tk = weights.shape
    z, a, b = block_mean(weights, mask)
    layout = grid_layout(
        L,
        H,
        horizontal_spacing=0.015,
        vertical_spacing=0.03,
        row_titles=[_("layer {i}").format(i=i) for i in range(L)],
        column_titles=[_("head {h}").format(h=h) for h in range(H)],
    )
    if a == 1 and b == 1:
        what, where = "", _("query %{y}<br>key %{x}<br>weight %{z:.3f}")
    else:  # numeric axes of block starts: the hover names the block
        what = _(" (each cell: the mean of {a} × {b} positions)").format(a=a, b=b)
        where = (
            _("queries %{y}–%{y}+{a}<br>keys %{x}–%{x}+{b}<br>mean weight %{z:.3f}")
            .replace("{a}", str(a - 1))
            .replace("{b}", str(b - 1))
        )
    ys, xs = np.arange(z.shape[-2]) * a, np.arange(z.shape[-1]) * b
    traces = [  # plain dicts: go.Figure validates each trace once (a go.Heatmap is validated, then copied again)
        dict(
            type="heatmap",
            z=z[layer, h],
            x=xs,
            y=ys,
            xaxis=f"x{axis_suffix(i + 1)}",  # panel i + 1, row by row
            yaxis=f"y{axis_suffix(i + 1)}",
            coloraxis="coloraxis",
            hoverongaps=False,
            hovertemplate=_("layer {layer}, head {h}").format(layer=layer, h=h) + f"<br>{where}<extra></extra>",
        )
        for i, (layer, h) in enumerate((layer, h) for layer in range(L) for h in range(H))
    ]
    title = f"{title}{what}" if title else what.strip(" ()")
    for name in list(layout):
        if name.startswith("xaxis"):
            layout[name].update(showticklabels=False, ticks="", showgrid=False, zeroline=False, constrain="domain")
        elif name.startswith("yaxis"):
            layout[name].update(showticklabels=False, ticks="", showgrid=False, zeroline=False, autorange="reversed")
    row_px = 0.0
    for note in layout.get("annotations", []):  # the row and column titles, dark like every chart's text
        note.setdefault("font", {})["color"] = TEXT_COLOR
        if note.get("textangle") == 90:  # a layer's title: left of its row, level (it ran into the panels' edge)
            note.update(x=0, xanchor="right", xshift=-12, textangle=0)
            row_px = max(row_px, label_px(note["text"], 18))  # room for it at the presentation size too
    layout.update(
        title=dict(text=title, font=dict(color=TEXT_COLOR)),
        height=max(300, 150 * L + 100),
        plot_bgcolor=MASKED_COLOR,
        coloraxis=_coloraxis(),
        margin=dict(l=int(row_px) + 24, r=40, t=80, b=10),
        **FONTS,
    )
    return go.Figure(data=traces, layout=layout)  # built once: see attention_heatmap
