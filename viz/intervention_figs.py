"""Figures of a changed model: which heads matter, and how the output's probability moved.

importance_heatmap: per attention kind a (layers, heads) panel of the drop in the output's log-probability when
that head alone is switched off; cells are clickable (a transparent marker over each, since plotly cannot select
heatmap cells) and the heads switched off now carry a cross.
logprob_change: per output token, its log-probability with the change minus without it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from i18n import N_, _

from .tokens import TEXT_COLOR, TICK_PX, indexed, readable, token_ticks

KINDS = ("encoder_self", "decoder_self", "cross")
KIND_NAMES = {"encoder_self": N_("Encoder self"), "decoder_self": N_("Decoder self"), "cross": N_("Cross")}
DIVERGING = "RdBu_r"  # red: the output needs the head (a drop); blue: more likely without it
MAX_CELL, MIN_CELL = 40, 14  # px of one head's cell
MIN_HEIGHT = 300  # px: room for the colour bar's labels when there are only a layer or two
OFF_COLOR = "#111111"


def importance_heatmap(
    drops: dict[str, np.ndarray],
    ablated: Collection[tuple[str, int, int]] = (),
    title: str = "",
    max_width: int = 860,
    tick_px: int = TICK_PX,
) -> go.Figure:
    """drops: kind -> (L, H) drop in log p; one panel per kind (in KINDS order), layers down, heads across.

    Every panel shares one colour axis centred on 0. The cell markers' customdata is [kind, layer, head], for
    a selection (st.plotly_chart(on_select=...)) to say which head was clicked.
    """
    kinds = [k for k in KINDS if k in drops]
    if not kinds:
        raise ValueError("no attention kind to draw")
    for kind in kinds:
        if np.ndim(drops[kind]) != 2:
            raise ValueError(f"drops[{kind!r}] must be (layers, heads), got shape {np.shape(drops[kind])}")
    n_heads = {np.shape(drops[k])[1] for k in kinds}
    if len(n_heads) != 1:
        raise ValueError(f"every kind must have the same number of heads, got {sorted(n_heads)}")
    H, L = n_heads.pop(), max(np.shape(drops[k])[0] for k in kinds)
    cell = float(np.clip((max_width - 60 * len(kinds)) / (len(kinds) * H), MIN_CELL, MAX_CELL))
    bound = max(1e-6, *(float(np.nanmax(np.abs(drops[k]))) for k in kinds))
    fig = make_subplots(
        rows=1, cols=len(kinds), subplot_titles=[_(KIND_NAMES[k]) for k in kinds], horizontal_spacing=0.06
    )
    hover = _("{kind}, layer %{y}, head %{x}<br>drop in log p: %{customdata[3]:.4f}") + "<extra></extra>"
    off = set(ablated)
    for col, kind in enumerate(kinds, start=1):
        z = np.asarray(drops[kind], dtype=np.float32)  # (L, H)
        layers, heads = np.meshgrid(np.arange(z.shape[0]), np.arange(H), indexing="ij")  # (L, H) each
        fig.add_trace(go.Heatmap(z=z, coloraxis="coloraxis", hoverinfo="skip"), row=1, col=col)
        custom = [[kind, int(i), int(h), float(z[i, h])] for i, h in zip(layers.ravel(), heads.ravel())]
        fig.add_trace(  # the clickable layer: invisible squares over the cells, hover and selection read them
            go.Scatter(
                x=heads.ravel(),
                y=layers.ravel(),
                mode="markers",
                marker=dict(symbol="square", size=cell * 0.9, opacity=0),
                selected=dict(marker=dict(opacity=0)),
                unselected=dict(marker=dict(opacity=0)),
                customdata=custom,
                hovertemplate=hover.replace("{kind}", _(KIND_NAMES[kind])),
                showlegend=False,
                name=kind,
            ),
            row=1,
            col=col,
        )
        marks = [(i, h) for k, i, h in sorted(off) if k == kind and i < z.shape[0] and h < H]
        fig.add_trace(
            go.Scatter(
                x=[h for _, h in marks],
                y=[i for i, _ in marks],
                mode="markers",
                # a white cross edged in black: seen on the darkest red or blue cell as on a white one; never dimmed
                # when a click selects a cell (plotly fades the unselected points of every trace otherwise)
                marker=dict(symbol="x", size=cell * 0.7, color="white", line=dict(width=2, color=OFF_COLOR)),
                selected=dict(marker=dict(opacity=1)),
                unselected=dict(marker=dict(opacity=1)),
                customdata=[[kind, i, h, float(z[i, h])] for i, h in marks],
                hovertemplate=hover.replace("{kind}", _(KIND_NAMES[kind])),
                name=_("switched off"),
                showlegend=False,
            ),
            row=1,
            col=col,
        )
    fig.update_xaxes(
        title_text=_("head"), tickmode="array", tickvals=list(range(H)), range=[-0.5, H - 0.5], showgrid=False,
        zeroline=False, constrain="domain",
    )  # fmt: skip
    fig.update_yaxes(
        tickmode="array",
        tickvals=list(range(L)),
        range=[L - 0.5, -0.5],
        showgrid=False,
        zeroline=False,
        constrain="domain",
        constraintoward="top",
    )  # both axes give way, so the head labels sit right under the cells
    fig.update_yaxes(title_text=_("layer"), col=1)
    for col in range(1, len(kinds) + 1):
        fig.update_xaxes(scaleanchor=f"y{'' if col == 1 else col}", row=1, col=col)
    fig.update_annotations(font=dict(size=tick_px + 1, color=TEXT_COLOR))
    fig.update_layout(
        title=title or _("Drop in the output's log-probability when one head is switched off"),
        height=int(max(MIN_HEIGHT, L * cell + 150)),
        coloraxis=dict(
            colorscale=DIVERGING, cmin=-bound, cmax=bound, colorbar=dict(title=_("drop"), thickness=14, len=1.0)
        ),
        margin=dict(t=80, l=10, r=10, b=10),
        clickmode="event+select",
        dragmode=False,
    )
    return readable(fig, tick_px)


def logprob_change(
    tokens: Sequence[str],
    plain: np.ndarray,
    changed: np.ndarray,
    title: str = "",
    width_px: int = 860,
    tick_px: int = TICK_PX,
) -> go.Figure:
    """Per output token, log p with the change minus log p without it: below 0, the token became less likely.

    plain, changed: (T,) log-probabilities of the same T output tokens; the title gives the total change.
    """
    plain, changed = np.asarray(plain, dtype=np.float64), np.asarray(changed, dtype=np.float64)
    if not len(tokens) == len(plain) == len(changed):
        raise ValueError(f"{len(tokens)} tokens, {len(plain)} plain and {len(changed)} changed log-probabilities")
    delta = changed - plain
    labels = indexed(tokens)  # unique category labels "i: token", escaped
    ticks = token_ticks(tokens, width_px / max(len(tokens), 1), size=tick_px)
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=delta,
            marker_color=["#d62728" if d < 0 else "#1f77b4" for d in delta],
            customdata=np.stack([np.exp(plain), np.exp(changed)], axis=-1),
            hovertemplate=_("%{x}<br>change in log p: %{y:+.3f}<br>p: %{customdata[0]:.3f} → %{customdata[1]:.3f}")
            + "<extra></extra>",
        )
    )
    fig.update_xaxes(type="category", **ticks.axis(), title_text=_("output tokens"))
    fig.update_xaxes(tickvals=[labels[i] for i in ticks.vals])
    fig.update_yaxes(title_text=_("change in log p"), zeroline=True, zerolinecolor=TEXT_COLOR)
    total = _("Change in each output token's log-probability (total {total:+.3f})").format(total=float(delta.sum()))
    fig.update_layout(title=title or total, height=300, margin=dict(t=60, l=10, r=10, b=10), showlegend=False)
    return readable(fig, tick_px)
