"""Attention sinks (StreamingLLM, Xiao et al. 2023; Gu et al. 2025): many heads put most of their weight on the
first token. Two views: the share of attention on the first token for every layer x head, and a map redrawn
without the sink's column, renormalised, so that what is left is readable (users of other tools log-scale by hand).

numpy in, plotly out; the shares are computed here from the recorded weights (rows are queries, columns keys).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from i18n import _

from .tokens import FONTS, TEXT_COLOR, plain_token


def sink_share(weights: np.ndarray, causal: bool = False, key: int = 0) -> np.ndarray:
    """(L, H, Tq, Tk) -> (L, H): each head's weight on key `key` (the first token), averaged over its queries.

    causal: the decoder's query 0 sees only key 0 (weight 1 whatever the head does), so with more than one query it
    is left out of the average."""
    if weights.ndim != 4:
        raise ValueError(f"weights must be (layers, heads, queries, keys), got shape {weights.shape}")
    if not 0 <= key < weights.shape[-1]:
        raise ValueError(f"key {key} is outside the {weights.shape[-1]} keys")
    rows = weights[:, :, 1:, key] if causal and weights.shape[2] > 1 else weights[:, :, :, key]
    return rows.mean(axis=-1).astype(np.float32)


def keys_share(weights: np.ndarray, keys: list[int], causal: bool = False) -> np.ndarray:
    """(L, H, Tq, Tk) -> (L, H): each head's summed weight on the keys `keys` (the sequence's other special tokens:
    BERT's [SEP], a separator), averaged over the queries that can see at least one of them (causal: query i sees
    keys <= i); zeros when there are none."""
    if weights.ndim != 4:
        raise ValueError(f"weights must be (layers, heads, queries, keys), got shape {weights.shape}")
    if not keys:
        return np.zeros(weights.shape[:2], dtype=np.float32)
    total = weights[..., keys].sum(axis=-1)  # (L, H, Tq)
    first = min(keys) if causal else 0  # the queries that can see one of them
    return total[:, :, first:].mean(axis=-1).astype(np.float32)


def without_sink(weights: np.ndarray, key: int = 0) -> np.ndarray:
    """(..., Tq, Tk) -> (..., Tq, Tk - 1): the weights without key `key`'s column, each row renormalised to sum to 1
    over the keys left (a row whose whole weight was on that key stays 0: it had nothing else to show)."""
    if weights.shape[-1] < 2:
        raise ValueError("a map needs at least two keys to leave one out")
    rest = np.delete(weights, key, axis=-1)
    total = rest.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, rest / np.where(total > 0, total, 1), 0.0).astype(np.float32)


def sink_map(
    share: np.ndarray, first_token: str, title: str = "", others: np.ndarray | None = None, other_tokens: str = ""
) -> go.Figure:
    """The (L, H) shares as a heatmap: rows layers, columns heads, 0..1, the share in the hover and in each cell;
    others (L, H): the share on the sequence's other special tokens (named in other_tokens), in the hover."""
    if share.ndim != 2:
        raise ValueError(f"share must be (layers, heads), got shape {share.shape}")
    if others is not None and others.shape != share.shape:
        raise ValueError(f"others must be {share.shape}, got {others.shape}")
    L, H = share.shape
    token = plain_token(first_token)
    hover = (
        _("layer %{y}, head %{x}<br>{share} of its attention on the first token “{token}”")
        .replace("{share}", "%{z:.0%}")
        .replace("{token}", token)
    )
    if others is not None:
        hover += "<br>" + (
            _("{share} on the other special tokens ({tokens})")
            .replace("{share}", "%{customdata:.0%}")
            .replace("{tokens}", plain_token(other_tokens))
        )
    trace = go.Heatmap(
        z=share.astype(np.float32),
        customdata=None if others is None else others.astype(np.float32),
        x=list(range(H)),
        y=list(range(L)),
        zmin=0.0,
        zmax=1.0,
        colorscale="Reds",
        texttemplate="%{z:.0%}",
        hovertemplate=hover + "<extra></extra>",
        colorbar=dict(title=dict(text=_("share"))),
    )
    fig = go.Figure(trace)
    fig.update_layout(
        title=dict(text=title, font=dict(color=TEXT_COLOR)),
        xaxis=dict(title=_("head"), dtick=1),
        yaxis=dict(title=_("layer"), dtick=1, autorange="reversed"),
        height=max(260, 40 * L + 140),
        **FONTS,
    )
    return fig
