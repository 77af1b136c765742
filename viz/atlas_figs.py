"""The head atlas's figures (numpy in, plotly Figure out): the layer x head grid coloured by each head's strongest
role, and one head's scores per role."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _

ROLE_COLOURS = ("#1f77b4", "#ff7f0e", "#d62728", "#2ca02c", "#9467bd", "#8c564b")  # one per role, in order


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha:.3f})"


def role_grid(
    strongest: np.ndarray,
    strength: np.ndarray,
    relative: np.ndarray,
    role_titles: Sequence[str],
    selected: tuple[int, int] | None = None,
    title: str = "",
) -> go.Figure:
    """One square per head (x: head, y: layer), coloured by its strongest role (strongest (L, H): index into
    role_titles), opaque in proportion to 0.25 + 0.75 x strength (L, H) in [0, 1] (its switch-off effect); relative
    (R, L, H): each role's score as a share of a perfect head's, in the hover. ValueError on mismatched shapes."""
    strongest, strength, relative = np.asarray(strongest), np.asarray(strength), np.asarray(relative)
    if strongest.shape != strength.shape or relative.shape[1:] != strongest.shape:
        raise ValueError(
            f"shapes differ: strongest {strongest.shape}, strength {strength.shape}, relative {relative.shape}"
        )
    if relative.shape[0] != len(role_titles):
        raise ValueError(f"{relative.shape[0]} roles of scores, {len(role_titles)} titles")
    L, H = strongest.shape
    fig = go.Figure()
    for r, name in enumerate(role_titles):
        layers, heads = np.nonzero(strongest == r)
        colour = ROLE_COLOURS[r % len(ROLE_COLOURS)]
        fig.add_trace(
            go.Scatter(
                x=heads,
                y=layers,
                mode="markers",
                name=name,
                marker=dict(
                    symbol="square",
                    size=max(10, min(44, 520 // max(L, H))),
                    color=[_rgba(colour, 0.25 + 0.75 * float(strength[i, h])) for i, h in zip(layers, heads)],
                    line=dict(width=1, color=colour),
                ),
                customdata=np.stack([relative[r][layers, heads], strength[layers, heads]], axis=-1)
                if len(layers)
                else np.zeros((0, 2)),
                hovertemplate=_("layer %{y}, head %{x}")
                + "<br>"
                + name
                + ": %{customdata[0]:.0%}<br>"
                + _("switch-off strength")
                + ": %{customdata[1]:.0%}<extra></extra>",
            )
        )
    if selected is not None:
        fig.add_trace(
            go.Scatter(
                x=[selected[1]],
                y=[selected[0]],
                mode="markers",
                marker=dict(
                    symbol="square-open", size=max(14, min(50, 560 // max(L, H))), color="black", line=dict(width=3)
                ),
                showlegend=False,
                hoverinfo="skip",
            )
        )
    fig.update_layout(
        title=title,
        xaxis=dict(title=_("head"), tickmode="array", tickvals=list(range(H)), range=[-0.6, H - 0.4]),
        # square cells: one layer's row as tall as one head's column is wide, a marker and a margin per cell
        yaxis=dict(title=_("layer"), tickmode="array", tickvals=list(range(L)), range=[L - 0.4, -0.6], scaleanchor="x"),
        height=min(700, max(240, 130 + int(1.4 * max(10, min(44, 520 // max(L, H)))) * L)),
        legend=dict(orientation="h", y=-0.2),
        margin=dict(l=60, r=20, t=50, b=40),
    )
    return fig


def head_roles_bar(role_titles: Sequence[str], shares: Sequence[float], title: str = "") -> go.Figure:
    """One head's score per role, as a share of a perfect head's (0 to 1)."""
    if len(role_titles) != len(shares):
        raise ValueError(f"{len(shares)} scores, {len(role_titles)} roles")
    colours = [ROLE_COLOURS[i % len(ROLE_COLOURS)] for i in range(len(role_titles))]
    fig = go.Figure(go.Bar(x=list(role_titles), y=[float(s) for s in shares], marker_color=colours))
    fig.update_layout(
        title=title,
        yaxis=dict(
            title=_("share of a perfect head's score"), range=[0, max(1.0, *map(float, shares))], tickformat=".0%"
        ),
        height=320,
        margin=dict(l=60, r=20, t=50, b=40),
    )
    return fig


def alignment_grid(scores: np.ndarray, title: str = "") -> go.Figure:
    """(L, H) scores in [0, 1] as a layer x head heatmap (cross-attention's agreement with a gold alignment)."""
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 2:
        raise ValueError(f"scores must be (layers, heads), got shape {scores.shape}")
    fig = go.Figure(
        go.Heatmap(
            z=scores, zmin=0, zmax=1, colorscale="Blues", texttemplate="%{z:.2f}",
            hovertemplate=_("layer %{y}, head %{x}") + ": %{z:.2f}<extra></extra>",
        )
    )  # fmt: skip
    fig.update_layout(
        title=title,
        xaxis=dict(title=_("head"), tickmode="array", tickvals=list(range(scores.shape[1]))),
        yaxis=dict(title=_("layer"), tickmode="array", tickvals=list(range(scores.shape[0])), autorange="reversed"),
        height=min(600, 140 + 48 * scores.shape[0]),
    )
    return fig
