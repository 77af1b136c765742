"""Attention heatmaps: one head, all heads of a layer, every layer x head, and the head average.

Rows are query tokens (top to bottom), columns are key tokens. Axes are numeric positions with the
tokens as tick text, so repeated tokens never merge. Masked cells (the causal mask of decoder
self-attention) are drawn as grey, not as zero weight.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .tokens import display_tokens, tick_font_size

COLORSCALE = "Blues"
MASKED_COLOR = "#d9d9d9"
KIND_TITLES = {
    "encoder_self": "Encoder self-attention",
    "decoder_self": "Decoder self-attention (causal)",
    "cross": "Cross-attention (decoder → encoder)",
}


def causal_mask(n_queries: int, n_keys: int) -> np.ndarray:
    """(Tq, Tk) True where a query may not look: keys after the query's own position."""
    return np.triu(np.ones((n_queries, n_keys), dtype=bool), k=1)


def _check(weights: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str], ndim: int) -> None:
    if weights.ndim != ndim:
        raise ValueError(f"weights must have {ndim} axes, got shape {weights.shape}")
    if weights.shape[-2] != len(query_tokens):
        raise ValueError(f"weights have {weights.shape[-2]} query rows but there are {len(query_tokens)} query tokens")
    if weights.shape[-1] != len(key_tokens):
        raise ValueError(f"weights have {weights.shape[-1]} key columns but there are {len(key_tokens)} key tokens")


def _heatmap_trace(weights: np.ndarray, query_tokens, key_tokens, mask, showscale: bool, zmax: float) -> go.Heatmap:
    z = weights.astype(float)
    hover = np.full(z.shape, "", dtype=object)
    q_shown, k_shown = display_tokens(query_tokens, 40), display_tokens(key_tokens, 40)
    for i, q in enumerate(q_shown):
        for j, k in enumerate(k_shown):
            hover[i, j] = f"query {i}: {q}<br>key {j}: {k}<br>" + (
                "masked (future position)" if mask is not None and mask[i, j] else f"weight {z[i, j]:.3f}"
            )
    if mask is not None:
        z = np.where(mask, np.nan, z)
    return go.Heatmap(
        z=z, x=np.arange(z.shape[1]), y=np.arange(z.shape[0]), zmin=0.0, zmax=zmax, colorscale=COLORSCALE,
        showscale=showscale, customdata=hover, hovertemplate="%{customdata}<extra></extra>", hoverongaps=False,
        colorbar=dict(title="weight", thickness=14) if showscale else None,
    )


def _token_axes(fig: go.Figure, query_tokens, key_tokens, row=None, col=None, labels: bool = True) -> None:
    nq, nk = len(query_tokens), len(key_tokens)
    xaxis = dict(tickmode="array", tickvals=list(range(nk)), ticktext=display_tokens(key_tokens) if labels else None,
                 showticklabels=labels, tickangle=-60 if nk > 12 else 0, tickfont=dict(size=tick_font_size(nk)),
                 side="bottom", showgrid=False, zeroline=False)
    yaxis = dict(tickmode="array", tickvals=list(range(nq)), ticktext=display_tokens(query_tokens) if labels else None,
                 showticklabels=labels, autorange="reversed", tickfont=dict(size=tick_font_size(nq)),
                 showgrid=False, zeroline=False)
    fig.update_xaxes(**xaxis, row=row, col=col)
    fig.update_yaxes(**yaxis, row=row, col=col)


def _size(n_rows: int, n_cols: int, min_px: int = 360, per_token: int = 22, max_px: int = 1400) -> int:
    return int(min(max_px, max(min_px, per_token * max(n_rows, n_cols) + 140)))


def attention_heatmap(
    weights: np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    title: str = "",
    mask: np.ndarray | None = None,
    query_label: str = "query",
    key_label: str = "key",
) -> go.Figure:
    """One (Tq, Tk) attention map as a large heatmap; mask (Tq, Tk) True marks cells drawn as masked."""
    _check(weights, query_tokens, key_tokens, 2)
    if mask is not None and mask.shape != weights.shape:
        raise ValueError(f"mask shape {mask.shape} differs from weights shape {weights.shape}")
    fig = go.Figure(_heatmap_trace(weights, query_tokens, key_tokens, mask, True, 1.0))
    _token_axes(fig, query_tokens, key_tokens)
    fig.update_xaxes(title_text=f"{key_label} tokens (attended to)")
    fig.update_yaxes(title_text=f"{query_label} tokens (attending)")
    side = _size(len(query_tokens), len(key_tokens))
    fig.update_layout(title=title, height=side, plot_bgcolor=MASKED_COLOR, margin=dict(l=10, r=10, t=60, b=10))
    return fig


def head_grid(
    weights: np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    title: str = "",
    mask: np.ndarray | None = None,
    columns: int = 4,
) -> go.Figure:
    """All heads of one layer, (H, Tq, Tk), as a grid of heatmaps sharing one colour scale."""
    _check(weights, query_tokens, key_tokens, 3)
    n_heads = weights.shape[0]
    cols = min(columns, n_heads)
    rows = -(-n_heads // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[f"head {h}" for h in range(n_heads)],
                        horizontal_spacing=0.06, vertical_spacing=0.12 / max(rows, 1) + 0.04)
    labels = max(len(query_tokens), len(key_tokens)) <= 40
    for h in range(n_heads):
        r, c = h // cols + 1, h % cols + 1
        fig.add_trace(_heatmap_trace(weights[h], query_tokens, key_tokens, mask, h == 0, 1.0), row=r, col=c)
        _token_axes(fig, query_tokens, key_tokens, row=r, col=c, labels=labels)
    panel = _size(len(query_tokens), len(key_tokens), min_px=260, per_token=14, max_px=700)
    fig.update_layout(title=title, height=panel * rows + 80, plot_bgcolor=MASKED_COLOR, margin=dict(l=10, r=10, t=80, b=10))
    return fig


def layer_head_overview(weights: np.ndarray, title: str = "", mask: np.ndarray | None = None) -> go.Figure:
    """Every layer x head, (L, H, Tq, Tk), as small thumbnails: rows are layers, columns are heads."""
    if weights.ndim != 4:
        raise ValueError(f"weights must be (layers, heads, queries, keys), got shape {weights.shape}")
    L, H, Tq, Tk = weights.shape
    fig = make_subplots(rows=L, cols=H, horizontal_spacing=0.015, vertical_spacing=0.03,
                        row_titles=[f"layer {i}" for i in range(L)], column_titles=[f"head {h}" for h in range(H)])
    blank = [""] * max(Tq, Tk)
    for layer in range(L):
        for h in range(H):
            trace = _heatmap_trace(weights[layer, h], blank[:Tq], blank[:Tk], mask, layer == h == 0, 1.0)
            trace.hovertemplate = f"layer {layer}, head {h}<br>query %{{y}}, key %{{x}}<br>weight %{{z:.3f}}<extra></extra>"
            trace.customdata = None
            fig.add_trace(trace, row=layer + 1, col=h + 1)
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False, constrain="domain")
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, autorange="reversed")
    fig.update_layout(title=title, height=max(300, 150 * L + 100), plot_bgcolor=MASKED_COLOR, margin=dict(l=10, r=40, t=80, b=10))
    return fig


def head_average(weights: np.ndarray) -> np.ndarray:
    """Mean over heads: (H, Tq, Tk) -> (Tq, Tk)."""
    if weights.ndim != 3:
        raise ValueError(f"weights must be (heads, queries, keys), got shape {weights.shape}")
    return weights.mean(axis=0)
