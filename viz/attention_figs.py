"""Attention heatmaps: one head, all heads of a layer, every layer x head, and the head average.

Rows are query tokens (top to bottom), columns are key tokens. Axes are categorical with one label
"i: token" per position (so repeated tokens never merge), shown as the plain token in the tick text.
Masked cells (the causal mask of decoder self-attention) are drawn as grey, not as zero weight.

Built for size (issue 11): weights go to the browser as one float32 typed array per heatmap, every
heatmap of a figure shares one colour axis, and one hovertemplate per trace reads the token labels
from the axes; nothing is formatted per cell in Python.
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


def token_labels(tokens: Sequence[str], max_chars: int = 40) -> list[str]:
    """Unique category labels "i: token" for one side (plotly merges equal labels, so the index stays)."""
    return [f"{i}: {t}" for i, t in enumerate(display_tokens(tokens, max_chars))]


def _z(weights: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """The weights as float32 (sent as a typed array), masked cells NaN (drawn as the grey background)."""
    z = np.asarray(weights, dtype=np.float32)
    return np.where(mask, np.float32(np.nan), z) if mask is not None else z


def _heatmap_trace(weights: np.ndarray, q_labels: Sequence[str] | None, k_labels: Sequence[str] | None, mask,
                   coloraxis: str = "coloraxis", what: str = "") -> go.Heatmap:
    """One heatmap on categorical axes: x = key labels, y = query labels, both "i: token" (None: positions).

    Hover reads the labels from the axes and the weight from z, through one hovertemplate: nothing is
    built per cell in Python, and the browser gets Tq + Tk strings and one float32 array. Masked cells
    are NaN: not drawn (the grey plot background shows) and without hover.
    """
    return go.Heatmap(
        z=_z(weights, mask), x=None if k_labels is None else list(k_labels), y=None if q_labels is None else list(q_labels),
        coloraxis=coloraxis, hoverongaps=False,
        hovertemplate=f"{what}query %{{y}}<br>key %{{x}}<br>weight %{{z:.3f}}<extra></extra>",
    )


def _coloraxis(showscale: bool = True) -> dict:
    """The one colour axis every heatmap of a figure shares: weights 0..1 on COLORSCALE."""
    return dict(colorscale=COLORSCALE, cmin=0.0, cmax=1.0, showscale=showscale,
                colorbar=dict(title=dict(text="weight"), thickness=14))


def _token_axes(fig: go.Figure, query_tokens, key_tokens, row=None, col=None, labels: bool = True) -> None:
    nq, nk = len(query_tokens), len(key_tokens)
    # Categorical axes (the traces' x and y are the "i: token" labels); numeric tick values are category positions.
    xaxis = dict(type="category", tickmode="array", tickvals=list(range(nk)), ticktext=display_tokens(key_tokens) if labels else None,
                 showticklabels=labels, tickangle=-60 if nk > 12 else 0, tickfont=dict(size=tick_font_size(nk)),
                 side="bottom", showgrid=False, zeroline=False)
    yaxis = dict(type="category", tickmode="array", tickvals=list(range(nq)), ticktext=display_tokens(query_tokens) if labels else None,
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
    fig = go.Figure(_heatmap_trace(weights, token_labels(query_tokens), token_labels(key_tokens), mask))
    _token_axes(fig, query_tokens, key_tokens)
    fig.update_xaxes(title_text=f"{key_label} tokens (attended to)")
    fig.update_yaxes(title_text=f"{query_label} tokens (attending)")
    side = _size(len(query_tokens), len(key_tokens))
    fig.update_layout(title=title, height=side, plot_bgcolor=MASKED_COLOR, coloraxis=_coloraxis(),
                      margin=dict(l=10, r=10, t=60, b=10))
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
    q_labels, k_labels = token_labels(query_tokens), token_labels(key_tokens)
    fig.add_traces([_heatmap_trace(weights[h], q_labels, k_labels, mask, what=f"head {h}<br>") for h in range(n_heads)],
                   rows=[h // cols + 1 for h in range(n_heads)], cols=[h % cols + 1 for h in range(n_heads)])
    _token_axes(fig, query_tokens, key_tokens, labels=labels)  # every panel's axes alike
    panel = _size(len(query_tokens), len(key_tokens), min_px=260, per_token=14, max_px=700)
    fig.update_layout(title=title, height=panel * rows + 80, plot_bgcolor=MASKED_COLOR, coloraxis=_coloraxis(),
                      margin=dict(l=10, r=10, t=80, b=10))
    return fig


def layer_head_overview(weights: np.ndarray, title: str = "", mask: np.ndarray | None = None) -> go.Figure:
    """Every layer x head, (L, H, Tq, Tk), as small thumbnails: rows are layers, columns are heads."""
    if weights.ndim != 4:
        raise ValueError(f"weights must be (layers, heads, queries, keys), got shape {weights.shape}")
    L, H, Tq, Tk = weights.shape
    fig = make_subplots(rows=L, cols=H, horizontal_spacing=0.015, vertical_spacing=0.03,
                        row_titles=[f"layer {i}" for i in range(L)], column_titles=[f"head {h}" for h in range(H)])
    # numeric positions (hover says "query 3"): thumbnails carry no tick labels
    fig.add_traces([_heatmap_trace(weights[layer, h], None, None, mask, what=f"layer {layer}, head {h}<br>")
                    for layer in range(L) for h in range(H)],
                   rows=[layer + 1 for layer in range(L) for _ in range(H)], cols=[h + 1 for _ in range(L) for h in range(H)])
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False, constrain="domain")
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, autorange="reversed")
    fig.update_layout(title=title, height=max(300, 150 * L + 100), plot_bgcolor=MASKED_COLOR, coloraxis=_coloraxis(),
                      margin=dict(l=10, r=40, t=80, b=10))
    return fig


def head_average(weights: np.ndarray) -> np.ndarray:
    """Mean over heads: (H, Tq, Tk) -> (Tq, Tk)."""
    if weights.ndim != 3:
        raise ValueError(f"weights must be (heads, queries, keys), got shape {weights.shape}")
    return weights.mean(axis=0)
