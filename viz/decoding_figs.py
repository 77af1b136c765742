"""Figures for one step of greedy decoding: candidates, and where the new token looked."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _

from .attention_figs import COLORSCALE, token_labels
from .tokens import display_token, readable, token_ticks


def top_k_bars(tokens: Sequence[str], probs: np.ndarray, chosen: int | None = 0, title: str = "") -> go.Figure:
    """Horizontal bars of the k most probable next tokens, most probable on top; the chosen one highlighted."""
    if len(tokens) != len(probs):
        raise ValueError(f"{len(tokens)} candidate tokens but {len(probs)} probabilities")
    labels = [f"{i + 1}. {display_token(t)}" for i, t in enumerate(tokens)]
    colors = ["#d62728" if i == chosen else "#1f77b4" for i in range(len(tokens))]
    fig = go.Figure(
        go.Bar(
            x=probs,
            y=labels,
            orientation="h",
            marker_color=colors,
            text=[f"{p:.1%}" for p in probs],
            textposition="auto",
            outsidetextfont=dict(color="#222222", size=14),
            insidetextfont=dict(color="white", size=14),
            hovertemplate="%{y}<br>p = %{x:.4f}<extra></extra>",
        )
    )
    fig.update_xaxes(title_text=_("probability"), range=[0, 1])
    # Categories whatever the tokens look like: digit tokens ("2", "4") would otherwise make a numeric axis.
    fig.update_yaxes(type="category", autorange="reversed", tickfont=dict(size=14))
    fig.update_layout(
        title=title or _("Next-token candidates"), height=80 + 36 * len(tokens), margin=dict(t=50, l=10, r=10, b=10)
    )
    return readable(fig)


def step_rows(rows: np.ndarray, key_tokens: Sequence[str], title: str, width_px: int = 560) -> go.Figure:
    """(L, H, Tk) attention rows of the newest position: one line per layer x head, keys across.

    width_px: about how wide the plot is drawn, so that key labels are thinned rather than crowded.
    """
    if rows.ndim != 3 or rows.shape[-1] != len(key_tokens):
        raise ValueError(f"rows must be (layers, heads, {len(key_tokens)}), got shape {rows.shape}")
    L, H, Tk = rows.shape
    names = [f"L{layer} H{h}" for layer in range(L) for h in range(H)]
    z = np.asarray(rows, dtype=np.float32).reshape(L * H, Tk)  # (L*H, Tk): row layer*H + head
    fig = go.Figure(
        go.Heatmap(  # categorical axes: hover reads the row name and the "i: token" label from them
            z=z,
            x=token_labels(key_tokens),
            y=names,
            coloraxis="coloraxis",
            hovertemplate="%{y}<br>" + _("key %{x}<br>weight %{z:.3f}") + "<extra></extra>",
        )
    )
    fig.update_xaxes(type="category", **token_ticks(key_tokens, width_px / max(Tk, 1)).axis())
    fig.update_yaxes(type="category", autorange="reversed")
    fig.update_layout(
        coloraxis=dict(colorscale=COLORSCALE, cmin=0, cmax=1, colorbar=dict(title=dict(text=_("weight")), thickness=14))
    )
    fig.update_layout(title=title, height=max(200, 20 * L * H + 110), margin=dict(t=50, l=10, r=10, b=10))
    return readable(fig)
