"""Attribution figures: one output token's scores per method side by side, and one method's matrix.

numpy in, plotly out. Source tokens are categories "i: token" (unique, so repeated tokens never merge). Scores of
different methods live on different scales (shares of 1, log-probability drops, gradients): each panel keeps its
own axis, and a signed method's matrix is drawn with a diverging scale centred on 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .attention_figs import token_labels
from .tokens import TEXT_COLOR, Rows, as_rows, display_token, label_px, plain_token, readable, wrap_px

POSITIVE, NEGATIVE = "#1f77b4", "#d62728"
TYPICAL_WIDTH_PX = 1100  # the width titles are wrapped for when the caller names none (the page names its own)


def _left(tokens: Sequence[str], tick_px: int) -> int:
    """A left margin that holds the longest tick label (the y axes do not grow their margin: under Streamlit's
    chart theme that automatic margin pushed the plot to the right edge)."""
    return int(16 + max((label_px(plain_token(t), tick_px) for t in tokens), default=0))


def source_bars(
    panels: Sequence[tuple[str, np.ndarray]],
    source_tokens: Sequence[str],
    title: str = "",
    width_px: int | None = None,
    tick_px: int = 12,
) -> go.Figure:
    """One panel per (name, (S,) scores), side by side, one horizontal bar per source token (shared rows).

    ValueError when a panel's length is not the number of source tokens."""
    if not panels:
        raise ValueError("no panels to draw")
    S = len(source_tokens)
    for name, values in panels:
        if np.asarray(values).shape != (S,):
            raise ValueError(f"panel {name!r} has shape {np.asarray(values).shape}, expected ({S},)")
    labels = token_labels(source_tokens)
    left = _left(source_tokens, tick_px)
    # each panel's title wrapped to the panel's width (a 1366 px screen cut the last one), for the width drawn
    panel_px = ((width_px or TYPICAL_WIDTH_PX) - left - 10) / len(panels) * (1 - 0.02 * (len(panels) - 1) / len(panels))
    titles = [wrap_px(name, panel_px - 8, tick_px) for name, _ in panels]
    lines = max(len(t) for t in titles)
    fig = make_subplots(rows=1, cols=len(panels), shared_yaxes=True, subplot_titles=["<br>".join(t) for t in titles],
                        horizontal_spacing=0.02)  # fmt: skip
    for i, (name, values) in enumerate(panels, start=1):
        v = np.asarray(values, dtype=np.float64)
        fig.add_trace(
            go.Bar(
                x=v, y=np.arange(S), orientation="h", name=name, showlegend=False, customdata=labels,
                marker_color=[POSITIVE if x >= 0 else NEGATIVE for x in v],
                hovertemplate="%{customdata}: %{x:.4g}<extra>" + name.replace("%", "%%") + "</extra>",
            ),
            row=1, col=i,
        )  # fmt: skip
        fig.update_xaxes(showticklabels=False, zeroline=True, zerolinecolor="#888", row=1, col=i)
    fig.update_yaxes(
        range=[S - 0.5, -0.5], automargin=False, tickvals=list(range(S)), ticktext=[display_token(t) for t in source_tokens],
        tickfont=dict(size=tick_px, color=TEXT_COLOR),
    )  # fmt: skip
    fig.update_annotations(font=dict(size=tick_px, color=TEXT_COLOR))
    fig.update_layout(
        title=dict(text=title, yref="container", y=1, yanchor="top", pad=dict(t=12)),  # above every title's lines
        height=max(260, 90 + S * (tick_px + 8)) + (lines - 1) * (tick_px + 6), width=width_px,
        margin=dict(l=left, r=10, t=80 + (lines - 1) * (tick_px + 6), b=10),
        bargap=0.15,
    )  # fmt: skip
    return readable(fig, tick_px)


def score_matrix(
    scores: np.ndarray,
    output_tokens: Rows | Sequence[str],
    source_tokens: Sequence[str],
    title: str = "",
    output_label: str = "output",
    source_label: str = "source",
    chosen: int | None = None,
    max_width: int | None = None,
    tick_px: int = 12,
) -> go.Figure:
    """(T, S) scores as a heatmap, rows the output tokens, columns the source tokens; `chosen` row outlined.

    Non-negative scores: Blues from 0; signed scores: a red-white-blue scale centred on 0. output_tokens: the rows, a
    Rows (viz/tokens.written_rows: the hover names the decoder input that wrote each) or a plain list.
    """
    rows_of = as_rows(output_tokens)
    output_tokens = rows_of.tokens
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != (len(output_tokens), len(source_tokens)):
        raise ValueError(
            f"scores {scores.shape} do not fit {len(output_tokens)} output x {len(source_tokens)} source tokens"
        )
    signed = bool((scores < 0).any())
    rows, cols = rows_of.labels(), token_labels(source_tokens)
    bound = float(np.abs(scores).max()) or 1.0
    heat = go.Heatmap(
        z=scores.astype(np.float32), x=np.arange(len(cols)), y=np.arange(len(rows)),
        customdata=np.array([[(r, c) for c in cols] for r in rows], dtype=object),
        colorscale="RdBu" if signed else "Blues", zmid=0 if signed else None,
        zmin=-bound if signed else 0, zmax=bound,
        hovertemplate=f"{output_label} %{{customdata[0]}}<br>{source_label} %{{customdata[1]}}<br>%{{z:.4g}}<extra></extra>",
    )  # fmt: skip
    fig = go.Figure(heat)
    if chosen is not None and 0 <= chosen < len(rows):
        fig.add_shape(type="rect", xref="paper", x0=0, x1=1, yref="y", y0=chosen - 0.5, y1=chosen + 0.5,
                      line=dict(color="#ff7f0e", width=3))  # fmt: skip
    side = tick_px + 14
    fig.update_yaxes(range=[len(rows) - 0.5, -0.5], title=output_label, automargin=False, tickvals=list(range(len(rows))),
                     ticktext=[display_token(t) for t in output_tokens], tickfont=dict(size=tick_px))  # fmt: skip
    fig.update_xaxes(title=source_label, tickvals=list(range(len(cols))), ticktext=[display_token(t) for t in source_tokens],
                     tickfont=dict(size=tick_px), side="top")  # fmt: skip
    width = 160 + len(cols) * side
    fig.update_layout(
        title=dict(text=title),
        width=min(width, max_width) if max_width else width, height=160 + len(rows) * side,
        margin=dict(l=_left(output_tokens, tick_px) + tick_px + 16, r=10, t=110, b=10),
    )  # fmt: skip
    return readable(fig, tick_px)
