"""Positional-encoding figures: the table, its sinusoids, offset dot products, similarity, norms."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import N_, _

from .tokens import readable, token_ticks

DIVERGING = "RdBu"
# pe_matrix's height: ROW_PX per position and CHROME_PX for title and axes, at least MIN_HEIGHT_PX, at most max_height
ROW_PX, CHROME_PX, MIN_HEIGHT_PX = 6, 120, 380


def pe_matrix(pe: np.ndarray, title: str = "", max_height: int = 520) -> go.Figure:
    """(P, D) table: positions down, dimensions across, values in [-1, 1] on a diverging scale; at most max_height px."""
    if pe.ndim != 2:
        raise ValueError(f"pe must be (positions, dimensions), got shape {pe.shape}")
    bound = float(max(1.0, np.abs(pe).max()))
    fig = go.Figure(
        go.Heatmap(
            z=pe,
            zmin=-bound,
            zmax=bound,
            colorscale=DIVERGING,
            colorbar=dict(title=_("value"), thickness=14),
            hovertemplate=_("position %{y}<br>dimension %{x}<br>value %{z:.3f}") + "<extra></extra>",
        )
    )
    fig.update_xaxes(title_text=_("dimension (2i: sin, 2i+1: cos)"))
    fig.update_yaxes(title_text=_("position"), autorange="reversed")
    fig.update_layout(
        title=title or _("Positional encoding matrix"),
        height=min(max_height, max(MIN_HEIGHT_PX, ROW_PX * pe.shape[0] + CHROME_PX)),
        margin=dict(t=60, l=10, r=10, b=10),
        # the height rule as data: the lecture pack sizes a typed input's table by it (pack_live.js)
        meta=dict(height_rule=dict(row_px=ROW_PX, chrome_px=CHROME_PX, min_px=MIN_HEIGHT_PX, max_px=max_height)),
    )
    return readable(fig)


def sinusoid_curves(pe: np.ndarray, dims: Sequence[int], wavelengths: np.ndarray) -> go.Figure:
    """Value of chosen dimensions against position, each labelled with its wavelength."""
    fig = go.Figure()
    for d in dims:
        if not 0 <= d < pe.shape[1]:
            raise ValueError(f"dimension {d} is outside 0..{pe.shape[1] - 1}")
        kind = "sin" if d % 2 == 0 else "cos"
        fig.add_trace(
            go.Scatter(
                x=np.arange(pe.shape[0]),
                y=pe[:, d],
                mode="lines",
                name=_("dim {d} ({kind}), wavelength {wavelength}").format(
                    d=d, kind=kind, wavelength=f"{wavelengths[d]:,.1f}"
                ),
                hovertemplate=_("dim {d}").format(d=d)
                + "<br>"
                + _("position %{x}<br>value %{y:.3f}")
                + "<extra></extra>",
            )
        )
    fig.update_xaxes(title_text=_("position"))
    fig.update_yaxes(title_text=_("PE value"), range=[-1.1, 1.1])
    fig.update_layout(
        title=_("Sinusoids of chosen dimensions"),
        height=400,
        legend=dict(orientation="h", y=-0.25),
        margin=dict(t=60, l=10, r=10, b=10),
    )
    return readable(fig)


def offset_curves(dots: np.ndarray, positions: Sequence[int]) -> go.Figure:
    """PE(p) . PE(p+k) against k, one line per p: the lines lie on top of each other."""
    if dots.shape[0] != len(positions):
        raise ValueError(f"{dots.shape[0]} rows of dot products for {len(positions)} positions")
    fig = go.Figure()
    dashes = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
    for row, p in enumerate(positions):
        fig.add_trace(
            go.Scatter(
                x=np.arange(dots.shape[1]),
                y=dots[row],
                mode="lines",
                name=f"p = {p}",
                line=dict(dash=dashes[row % len(dashes)], width=2 + (len(positions) - row) * 0.6),
                hovertemplate=f"p = {p}<br>" + _("offset k %{x}") + "<br>PE(p)·PE(p+k) %{y:.3f}<extra></extra>",
            )
        )
    fig.update_xaxes(title_text=_("offset k"))
    fig.update_yaxes(title_text="PE(p) · PE(p+k)")
    fig.update_layout(
        title=_("Dot product against offset, for several starting positions p"),
        height=380,
        margin=dict(t=60, l=10, r=10, b=10),
    )
    return readable(fig)


def similarity_matrix(
    sim: np.ndarray,
    title: str = N_("Similarity of positions PE(i) · PE(j)"),
    value_label: str = N_("dot"),
    height: int = 480,
    zrange: tuple[float, float] | None = None,
) -> go.Figure:
    """(P, P) PE(i) . PE(j) for all pairs (or another similarity: title, value_label): bands parallel to the diagonal
    show it depends on i - j. zrange (low, high): one colour range shared by several maps (equal colours, equal values)."""
    if sim.ndim != 2 or sim.shape[0] != sim.shape[1]:
        raise ValueError(f"similarity must be square, got shape {sim.shape}")
    fig = go.Figure(
        go.Heatmap(
            z=sim,
            zmin=None if zrange is None else zrange[0],
            zmax=None if zrange is None else zrange[1],
            colorscale="Viridis",
            colorbar=dict(title=_(value_label), thickness=14),
            hovertemplate=_("position %{y} · position %{x}") + "<br>%{z:.3f}<extra></extra>",
        )
    )
    fig.update_xaxes(title_text=_("position j"), constrain="domain")
    fig.update_yaxes(title_text=_("position i"), autorange="reversed", scaleanchor="x")
    fig.update_layout(title=_(title), height=height, margin=dict(t=60, l=10, r=10, b=10))
    return readable(fig)


def rotation_matrix(m: np.ndarray, offset: int, show: int = 16) -> go.Figure:
    """The top-left show x show corner of M_k: 2x2 rotation blocks on the diagonal, zeros elsewhere."""
    corner = m[:show, :show]
    fig = go.Figure(
        go.Heatmap(
            z=corner,
            zmin=-1,
            zmax=1,
            colorscale=DIVERGING,
            colorbar=dict(thickness=14),
            hovertemplate=_("row %{y}, column %{x}") + "<br>%{z:.3f}<extra></extra>",
        )
    )
    fig.update_xaxes(title_text=_("dimension of PE(p)"), constrain="domain")
    fig.update_yaxes(title_text=_("dimension of PE(p+k)"), autorange="reversed", scaleanchor="x")
    fig.update_layout(
        title=_("M_k for k = {k} (first {n} dimensions)").format(k=offset, n=corner.shape[0]),
        height=400,
        margin=dict(t=60, l=10, r=10, b=10),
    )
    return readable(fig)


def side_name(side: str, other_tokens: Sequence[str]) -> str:
    """The name of a capture's side ("source" or "target") as the model's shape says it: an encoder-decoder has both;
    a side alone is a one-sequence model's, the "sequence" (prompt and continuation) a decoder-only model reads and
    writes, or the "text" an encoder-only model reads."""
    if len(other_tokens):
        return side
    return "sequence" if side == "target" else "text"


SIDE_TITLES = {  # side_name -> (the x axis's title, the chart's title), marked; translated where drawn
    "source": (N_("source tokens"), N_("Source: embedding size against positional signal")),
    "target": (N_("target tokens"), N_("Target: embedding size against positional signal")),
    "sequence": (
        N_("prompt and continuation"),
        N_("Prompt and continuation: embedding size against positional signal"),
    ),
    "text": (N_("text tokens"), N_("Text: embedding size against positional signal")),
}


def embedding_vs_pe(
    tokens: Sequence[str], embedding_norms: np.ndarray, pe_norms: np.ndarray, side: str, width_px: int = 860
) -> go.Figure:
    """Per token, the norm of its sqrt(d)-scaled embedding beside the norm of the PE row added to it.

    side: "source", "target", "sequence" or "text" (side_name; translated here).
    width_px: about how wide the plot is drawn, so that long inputs label every n-th token rather than crowd."""
    if not len(tokens) == len(embedding_norms) == len(pe_norms):
        raise ValueError(f"{len(tokens)} tokens, {len(embedding_norms)} embedding norms, {len(pe_norms)} PE norms")
    x = np.arange(len(tokens))
    fig = go.Figure(
        [
            go.Bar(x=x, y=embedding_norms, name=_("‖token embedding × √d‖")),
            go.Bar(x=x, y=pe_norms, name=_("‖positional encoding‖")),
        ]
    )
    if side in SIDE_TITLES:  # only the side drawn is translated: no other side's words in the run
        axis_title, title = (_(t) for t in SIDE_TITLES[side])
    else:
        axis_title, title = f"{side} tokens", f"{side.capitalize()}: embedding size against positional signal"
    fig.update_xaxes(**token_ticks(tokens, width_px / max(len(tokens), 1)).axis(), title_text=axis_title)
    fig.update_yaxes(title_text=_("L2 norm"))
    fig.update_layout(
        barmode="group",
        title=title,
        height=380,
        # the legend above the plot, right: below it, upright token labels (a long input's) would run into it
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="right", x=1),
        margin=dict(t=70, l=10, r=10, b=10),
        meta=dict(token_axis_px=width_px),  # the token axis's planned width (the pack's typed input's ticks)
    )
    return readable(fig)
