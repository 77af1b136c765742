"""Figures of today's positional kinds (RoPE, ALiBi, T5 relative bias) and of the length experiment.

numpy in, plotly Figure out; the numbers come from model/network/pe_kinds.py and tasks/length_experiment.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from i18n import N_, _

from .tokens import readable

MARGIN = dict(t=60, l=10, r=10, b=10)


def _finish(fig: go.Figure, title: str, x_title: str, y_title: str, height: int) -> go.Figure:
    """The axes' titles, the figure's title and height, its legend in a row under the plot; readable text."""
    fig.update_xaxes(title_text=x_title)
    fig.update_yaxes(title_text=y_title)
    fig.update_layout(title=title, height=height, margin=MARGIN, legend=dict(orientation="h", y=-0.25))
    return readable(fig)


DIVERGING = "RdBu"


def rope_rotation(
    q_path: np.ndarray,
    k_path: np.ndarray,
    pair: int,
    theta: float,
    height: int = 400,
    dims: tuple[int, int] | None = None,
) -> go.Figure:
    """One (q, k) dimension pair at positions 0..P-1, each (P, 2): both turn by theta per position on their circles.
    dims: the two dimensions of the head that pair turns (default (2·pair, 2·pair + 1), the interleaved layout;
    the "half" layout turns (pair, pair + d/2))."""
    first, second = dims if dims is not None else (2 * pair, 2 * pair + 1)
    if q_path.ndim != 2 or q_path.shape[1] != 2 or q_path.shape != k_path.shape:
        raise ValueError(f"q and k paths must both be (positions, 2), got {q_path.shape} and {k_path.shape}")
    positions = np.arange(q_path.shape[0])
    fig = go.Figure()
    for path, name, symbol in ((q_path, "q", "circle"), (k_path, "k", "diamond")):
        fig.add_trace(
            go.Scatter(
                x=path[:, 0], y=path[:, 1], mode="lines+markers", name=name,
                marker=dict(symbol=symbol, size=8, color=positions, colorscale="Viridis", showscale=name == "q",
                            colorbar=dict(title=_("position"), thickness=14)),
                line=dict(width=1), customdata=positions,
                hovertemplate=name + " · " + _("position %{customdata}") + "<br>(%{x:.2f}, %{y:.2f})<extra></extra>",
            )
        )  # fmt: skip
    fig.update_xaxes(title_text=_("dimension {d}").format(d=first), zeroline=True, constrain="domain")
    fig.update_yaxes(title_text=_("dimension {d}").format(d=second), zeroline=True, scaleanchor="x")
    fig.update_layout(
        title=_("Pair {i}: turns {theta} rad per position").format(i=pair, theta=f"{theta:.3g}"),
        height=height, margin=MARGIN, legend=dict(orientation="h", y=-0.2),
    )  # fmt: skip
    return readable(fig)


ROPE_PAIRS = {  # which two dimensions of a head pair i turns, per pe_layout (marked only: translated where shown)
    "interleaved": N_("pair i (dimensions 2i, 2i+1)"),
    "half": N_("pair i (dimensions i, i + d/2)"),
}


def rope_frequencies(theta: np.ndarray, height: int = 340, layout: str = "interleaved") -> go.Figure:
    """theta_i against pair i on a log axis, with the wavelength 2 pi / theta_i in the hover. layout: the model's
    pe_layout ("interleaved": pair i is dimensions 2i, 2i+1; "half": i and i + d/2), named in the axis title."""
    pairs = np.arange(len(theta))
    fig = go.Figure(
        go.Scatter(
            x=pairs, y=theta, mode="lines+markers", customdata=2 * np.pi / theta,
            hovertemplate=_("pair %{x}") + "<br>θ %{y:.3g}<br>" + _("wavelength %{customdata:,.1f} positions")
            + "<extra></extra>",
        )
    )  # fmt: skip
    fig.update_xaxes(title_text=_(ROPE_PAIRS.get(layout, ROPE_PAIRS["interleaved"])))
    # powers of ten as 1e-4, not SI prefixes ("100μ" reads as micro-something on a slide)
    fig.update_yaxes(title_text=_("θᵢ (radians per position)"), type="log", exponentformat="e", dtick=1)
    fig.update_layout(title=_("Rotation frequencies θᵢ = base^(−2i/d)"), height=height, margin=MARGIN)
    return readable(fig)


def rope_decay(distance: np.ndarray, same: np.ndarray, bound: np.ndarray, height: int = 340) -> go.Figure:
    """The score against distance: q = k (all ones) normalised to 1, and Su et al.'s upper bound (normalised too)."""
    fig = go.Figure(
        [
            go.Scatter(x=distance, y=same, mode="lines", name=_("q = k: q_m·k_n / q·k")),
            go.Scatter(
                x=distance,
                y=bound / bound[0],
                mode="lines",
                name=_("Su et al.'s bound (relative)"),
                line=dict(dash="dash"),
            ),  # fmt: skip
        ]
    )
    return _finish(fig, _("Long-range decay: the score shrinks as the distance grows"), _("distance m − n"),
                   _("score (1 at distance 0)"), height)  # fmt: skip


def head_maps(
    maps: np.ndarray | Sequence[np.ndarray],
    titles: Sequence[str],
    value_label: str,
    height: int = 360,
    title: str = "",
    zrange: tuple[float, float] | None = None,
) -> go.Figure:
    """(H, P, P) one map per head (or a list of 2-D maps, one per model, sizes may differ) side by side on ONE colour
    range and one colour bar (equal colours mean equal values): the data's range, or zrange (low, high)."""
    maps = [np.asarray(m) for m in maps]
    if any(m.ndim != 2 for m in maps) or len(titles) != len(maps):
        shapes = [m.shape for m in maps]
        raise ValueError(f"maps must be (heads, P, P) with one title per head, got {shapes} and {len(titles)}")
    H = len(maps)
    finite = np.concatenate([m[np.isfinite(m)] for m in maps]) if maps else np.zeros(0)
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if zrange is not None:
        low, high = zrange
    fig = make_subplots(rows=1, cols=H, subplot_titles=list(titles), horizontal_spacing=0.02)
    fig.update_annotations(font_size=11)
    for h in range(H):
        fig.add_trace(
            go.Heatmap(
                z=maps[h], coloraxis="coloraxis",
                hovertemplate=_("query %{y}, key %{x}") + "<br>%{z:.3f}<extra></extra>",
            ),
            row=1, col=h + 1,
        )  # fmt: skip
        fig.update_yaxes(autorange="reversed", scaleanchor=f"x{h + 1 if h else ''}", constrain="domain", row=1,
                         col=h + 1, showticklabels=h == 0)  # fmt: skip
        fig.update_xaxes(constrain="domain", row=1, col=h + 1)
    fig.update_layout(
        coloraxis=dict(colorscale="Viridis", cmin=low, cmax=high, colorbar=dict(title=value_label, thickness=14)),
        height=height, margin=dict(t=100 if title else 40, l=10, r=10, b=10), title=title,
    )  # fmt: skip
    return readable(fig)


def alibi_slopes(slopes: np.ndarray, height: int = 300) -> go.Figure:
    """Each head's slope m_h (a geometric sequence): the bias falls by m_h per position of distance."""
    heads = np.arange(len(slopes))
    fig = go.Figure(
        go.Bar(
            x=heads,
            y=slopes,
            text=[f"{s:.4g}" for s in slopes],
            textposition="outside",
            hovertemplate=_("head %{x}") + "<br>" + _("slope %{y:.4g}") + "<extra></extra>",
        )  # fmt: skip
    )
    fig.update_xaxes(title_text=_("head"), dtick=1)
    fig.update_yaxes(title_text=_("slope"), type="log")
    # heads are numbered from 0 here, so head h has the paper's slope 2^(−8(h+1)/H) (H a power of 2)
    fig.update_layout(title=_("ALiBi slopes 2^(−8(h+1)/H), heads h = 0 … H−1"), height=height, margin=MARGIN)
    return readable(fig)


def relative_buckets(
    rel: np.ndarray,
    encoder: np.ndarray,
    decoder: np.ndarray,
    max_exact: int,
    height: int = 380,
    decoder_exact: int | None = None,
) -> go.Figure:
    """T5's bucket against relative position (key − query), encoder (both directions) and decoder (one).

    max_exact: the encoder's exact distances (|key − query| < max_exact: a quarter of the buckets, as each direction
    gets half); decoder_exact: the decoder's (key − query in −(decoder_exact − 1) … 0: half the buckets, one
    direction), shaded apart (default 2 · max_exact)."""
    decoder_exact = 2 * max_exact if decoder_exact is None else decoder_exact
    fig = go.Figure(
        [
            go.Scatter(x=rel, y=encoder, mode="lines", line=dict(shape="hv"), name=_("encoder (bidirectional)")),
            go.Scatter(
                x=rel,
                y=decoder,
                mode="lines",
                line=dict(shape="hv", dash="dash"),
                name=_("decoder (keys before the query)"),
            ),  # fmt: skip
        ]
    )
    fig.add_vrect(x0=-decoder_exact + 0.5, x1=0.5, fillcolor="LightSkyBlue", opacity=0.25, line_width=0,
                  annotation_text=_("decoder: exact"), annotation_position="bottom left")  # fmt: skip
    fig.add_vrect(x0=-max_exact + 0.5, x1=max_exact - 0.5, fillcolor="LightGreen", opacity=0.25, line_width=0,
                  annotation_text=_("encoder: exact"), annotation_position="top right")  # fmt: skip
    return _finish(fig, _("T5's buckets: exact when near, logarithmic when far"),
                   _("relative position (key − query)"), _("bucket"), height)  # fmt: skip


def relative_bias(rel: np.ndarray, values: np.ndarray, title: str, height: int = 380) -> go.Figure:
    """values (H, N): each head's learned bias against relative position (key − query)."""
    if values.ndim != 2 or values.shape[1] != len(rel):
        raise ValueError(f"values must be (heads, {len(rel)}), got {values.shape}")
    fig = go.Figure(
        [
            go.Scatter(
                x=rel,
                y=values[h],
                mode="lines",
                name=_("head {h}").format(h=h),
                line=dict(shape="hv"),
                hovertemplate=_("head {h}").format(h=h)
                + "<br>"
                + _("key − query %{x}")
                + "<br>%{y:.3f}"
                + "<extra></extra>",
            )  # fmt: skip
            for h in range(values.shape[0])
        ]
    )
    return _finish(fig, title, _("relative position (key − query)"), _("bias added to the score"), height)


def length_curves(
    curves: Mapping[str, tuple[np.ndarray, np.ndarray]],
    trained: tuple[int, int],
    title: str,
    height: int = 420,
    others: Sequence[tuple[str, tuple[int, int]]] = (),
) -> go.Figure:
    """Exact match (0..1) against input length, one line per model; the trained lengths shaded. others: (label,
    (shortest, longest)) of models trained on other lengths (the decoder-only demos), each range outlined and named
    by its label, so that no curve seems to fail inside a range it was not trained on."""
    fig = go.Figure()
    dashes = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
    for i, (name, (lengths, exact)) in enumerate(curves.items()):
        if len(lengths) != len(exact):
            raise ValueError(f"{name}: {len(lengths)} lengths for {len(exact)} exact-match values")
        fig.add_trace(
            go.Scatter(
                x=lengths,
                y=exact,
                mode="lines+markers",
                name=name,
                line=dict(dash=dashes[i % len(dashes)]),
                marker=dict(size=5),
                hovertemplate=name + "<br>" + _("length %{x}") + "<br>" + _("exact match %{y:.0%}") + "<extra></extra>",
            )  # fmt: skip
        )
    fig.add_vrect(x0=trained[0] - 0.5, x1=trained[1] + 0.5, fillcolor="LightSkyBlue", opacity=0.25, line_width=0,
                  annotation_text=_("trained lengths"), annotation_position="top left")  # fmt: skip
    for label, (low, high) in others:
        fig.add_vrect(x0=low - 0.5, x1=high + 0.5, fillcolor="rgba(0,0,0,0)", line=dict(color="#444", dash="dash", width=1.5),
                      annotation_text=label, annotation_position="bottom right")  # fmt: skip
    fig.update_xaxes(title_text=_("input length (characters)"))
    fig.update_yaxes(title_text=_("exact match"), tickformat=".0%", range=[-0.03, 1.03])
    # the legend to the right, one model a line: below the plot it ran into the axis title (Chinese) and off the screen
    fig.update_layout(title=title, height=height, margin=MARGIN,
                      legend=dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top"))  # fmt: skip
    return readable(fig)


def score_bias(scaled: np.ndarray, bias: np.ndarray, key_labels: Sequence[str], title: str, height: int = 320):
    """Inside one head (ALiBi, T5): the positional bias per key beside the scaled score it is added to, and the sum."""
    if not scaled.shape == bias.shape == (len(key_labels),):
        raise ValueError(f"scaled {scaled.shape}, bias {bias.shape} and {len(key_labels)} keys differ")
    x = [f"{j}: {t}" for j, t in enumerate(key_labels)]  # unique labels: plotly merges repeated categories
    fig = go.Figure(
        [
            go.Bar(x=x, y=scaled, name=_("q·k_j / √d_k (scaled)")),
            go.Bar(x=x, y=bias, name=_("positional bias b_j")),
            go.Scatter(
                x=x,
                y=scaled + bias,
                mode="markers",
                marker=dict(size=10, symbol="diamond"),
                name=_("sum: what the softmax receives"),
            ),  # fmt: skip
        ]
    )
    fig.update_layout(title=title, barmode="group", height=height, margin=MARGIN, legend=dict(orientation="h", y=-0.3))
    return readable(fig)
