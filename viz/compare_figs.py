"""Figures that set attention side by side: two models and their difference, and attention over training.

compare_heatmaps: A and B on the weights' scale (0..1, one colour axis), A - B on a diverging scale centred
on 0 (red: B looks more, blue: A looks more), three panels with square cells sharing the token axes.
training_curve: scores per training snapshot against the step, the shown snapshot marked.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from i18n import _

from .attention_figs import (
    MASKED_COLOR,
    MAX_HEIGHT,
    MAX_WIDTH,
    TITLE_PX,
    _check,
    _coloraxis,
    _heatmap_trace,
    _token_axes,
    heatmap_geometry,
    token_labels,
)
from .tokens import CHAR_PX, TEXT_COLOR, TICK_COLOR, TICK_PX, Rows, as_rows, plain_token, readable

DIFF_COLORSCALE = "RdBu"  # low (B > A) red, high (A > B) blue
COLORBAR_PX = 80  # room for a colour bar and its ticks


def diff_bound(diff: np.ndarray, floor: float = 0.05) -> float:
    """The symmetric range of the difference scale: the largest |A - B| (at least `floor`, so identical maps stay
    white instead of showing rounding noise at full colour), rounded up to a multiple of 0.05."""
    top = float(np.nanmax(np.abs(diff))) if diff.size else 0.0
    return float(np.ceil(round(max(top, floor) / 0.05, 4)) * 0.05)  # (float32 0.4 is a hair above 8 x 0.05)


def compare_heatmaps(
    a: np.ndarray,
    b: np.ndarray,
    query_tokens: Rows | Sequence[str],
    key_tokens: Sequence[str],
    names: tuple[str, str] = ("A", "B"),
    title: str = "",
    mask: np.ndarray | None = None,
    max_height: int = MAX_HEIGHT,
    max_width: int = MAX_WIDTH,
    tick_px: int = TICK_PX,
    difference: str | None = None,
) -> go.Figure:
    """Two (Tq, Tk) attention maps of the same tokens and their difference A - B, side by side.

    names: what the panels call the two models; difference: the third panel's title (default "A name − B name": long
    names run into the second panel's title in a third of a projector's width). Masked cells (mask True, e.g. the causal mask) are grey in
    all three panels. query_tokens: the rows, as attention_heatmap takes them (a Rows or a plain list).
    """
    rows = as_rows(query_tokens)
    query_tokens = rows.tokens
    _check(a, query_tokens, key_tokens, 2)
    _check(b, query_tokens, key_tokens, 2)
    diff = np.asarray(a, dtype=np.float32) - np.asarray(b, dtype=np.float32)  # (Tq, Tk)
    bound = diff_bound(diff if mask is None else np.where(mask, 0, diff))
    ylabel_px = max((len(plain_token(t)) for t in query_tokens), default=1) * CHAR_PX * tick_px / TICK_PX + 40
    panel_w = int((max_width - ylabel_px - 2 * COLORBAR_PX - 16) / 3)
    geo = heatmap_geometry(query_tokens, key_tokens, max_height, panel_w, tick_px=tick_px)
    nq, nk = len(query_tokens), len(key_tokens)
    fig = make_subplots(
        rows=1,
        cols=3,
        shared_yaxes=True,
        horizontal_spacing=0.02,
        subplot_titles=[names[0], names[1], difference or _("{a} − {b}").format(a=names[0], b=names[1])],
    )
    q_labels, k_labels = rows.labels(), token_labels(key_tokens)
    fig.add_trace(_heatmap_trace(a, q_labels, k_labels, mask, what=f"{names[0]}<br>"), row=1, col=1)
    fig.add_trace(_heatmap_trace(b, q_labels, k_labels, mask, what=f"{names[1]}<br>"), row=1, col=2)
    fig.add_trace(
        _heatmap_trace(diff, q_labels, k_labels, mask, coloraxis="coloraxis2", what=f"{names[0]} − {names[1]}<br>"),
        row=1,
        col=3,
    )
    # The plot's share of the width: three panels of equal size, a colour bar after the second and the third.
    total = 3 * panel_w + 2 * COLORBAR_PX + 16
    w, bar, gap = panel_w / total, COLORBAR_PX / total, 8 / total
    domains = [(0, w), (w + gap, 2 * w + gap), (2 * w + gap + bar, 3 * w + gap + bar)]
    for i, (lo, hi) in enumerate(domains, start=1):  # token axes with square cells, then each panel's new place
        fig.update_layout(_token_axes(geo, nq, nk, i, y_labels=i == 1))
        # in a box laid out wider than its maps need, each map keeps to its place's right: beside the next map or
        # its colour bar, the extra width to the left of the three
        fig.layout[f"xaxis{'' if i == 1 else i}"].update(domain=[lo, hi], constraintoward="right")
    for annotation, (_lo, hi) in zip(fig.layout.annotations, domains):  # the panels' titles over their maps' right
        annotation.update(x=hi, xanchor="right")
    fig.update_xaxes(title_text=_("key tokens (attended to)"))
    fig.update_yaxes(title_text=rows.title() or _("query tokens (attending)"), row=1, col=1)
    weights_axis = _coloraxis()
    weights_axis["colorbar"].update(x=domains[1][1] + 0.005, xanchor="left", len=0.9, y=0.45)
    fig.update_layout(
        title=dict(text=title, font=dict(color=TEXT_COLOR)),
        height=geo.height + 20,
        plot_bgcolor=MASKED_COLOR,
        coloraxis=weights_axis,
        coloraxis2=dict(
            colorscale=DIFF_COLORSCALE,
            cmin=-bound,
            cmax=bound,
            cmid=0,
            colorbar=dict(
                title=dict(text=_("difference")),
                thickness=14,
                x=domains[2][1] + 0.005,
                xanchor="left",
                len=0.9,
                y=0.45,
                tickfont=dict(size=tick_px, color=TICK_COLOR),
            ),
        ),
        margin=dict(l=10, r=10, t=TITLE_PX + 20, b=10, pad=0),  # see MASKED_COLOR
    )
    fig.update_annotations(font=dict(size=tick_px + 1, color=TEXT_COLOR))
    return readable(fig, tick_px)


def training_curve(
    steps: Sequence[int],
    series: dict[str, Sequence[float | None]],
    current: int | None = None,
    title: str = "",
    height: int = 300,
    tick_px: int = TICK_PX,
) -> go.Figure:
    """Scores (0..1) per training snapshot: one line per entry of `series` (name -> one value per step, None where
    unknown); `current` (a step) is marked with a vertical line.

    Snapshots are evenly spaced, each tick labelled with its training step: taken at doubling steps, the early
    ones (where most of the change happens) would crowd together on a linear step axis.
    """
    for name, values in series.items():
        if len(values) != len(steps):
            raise ValueError(f"series {name!r} has {len(values)} values for {len(steps)} steps")
    x = list(range(len(steps)))
    fig = go.Figure()
    dashes = ["solid", "dash", "dot", "dashdot"]
    for i, (name, values) in enumerate(series.items()):
        ys = [np.nan if v is None else float(v) for v in values]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=ys,
                customdata=list(steps),
                mode="lines+markers",
                name=name,
                line=dict(width=3, dash=dashes[i % len(dashes)]),
                marker=dict(size=9),
                hovertemplate=_("step {step}").format(step="%{customdata}") + f"<br>{name}: %{{y:.1%}}<extra></extra>",
            )
        )
    if current is not None and current in steps:
        fig.add_vline(x=list(steps).index(current), line=dict(color="#d62728", width=2, dash="dash"))
    fig.update_xaxes(
        title_text=_("training step (one tick per snapshot)"),
        tickvals=x,
        ticktext=[str(s) for s in steps],
        range=[-0.3, len(steps) - 0.7],
    )
    fig.update_yaxes(title_text=_("share"), range=[-0.03, 1.03], tickformat=".0%")
    legend_px = 24 * len(series)
    fig.update_layout(
        title=dict(text=title or _("Scores per snapshot"), y=1.0, yanchor="top", pad=dict(t=12)),
        height=height + legend_px,
        legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"),
        margin=dict(t=50 + legend_px, l=10, r=10, b=10),
        hovermode="x unified",
    )
    return readable(fig, tick_px)
