"""Figures for decoding strategies beyond greedy: the tree of a beam search, and what sampling drew from.

Both are drawn to be read on a projector at 1366x768: tokens written at TICK_PX (never smaller; long tokens
are shortened to what fits one step's width, the hover names them whole), one row per place in the beam.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import N_, _

from .attention_figs import COLORSCALE
from .tokens import CHAR_PX, TEXT_COLOR, TICK_PX, display_token, hover_token, readable

# status -> (legend name, marker colour, symbol, size, text colour)
BEAM_STYLE = {
    "live": (N_("kept"), "#1f77b4", "circle", 13, TEXT_COLOR),
    # labels as dark as the page's text (a hall reads them from the back; the marker tells the status apart)
    "finished": (N_("finished: wrote </s> (label: its score)"), "#2ca02c", "diamond", 15, "#0b3d0b"),
    "pruned": (N_("pruned"), "#a6a6a6", "x", 10, "#2b2b2b"),
}
BEST_COLOR = "#d62728"
ROW_PX = 46  # px between two ranks of the beam tree: a token label above each marker fits
DRAWN_COLOR = "#d62728"
DARK_CELL = 0.5  # a probability whose cell COLORSCALE draws dark enough for white text


def _fit(token: str, px: float, size: int) -> str:
    """The token shortened to about `px` px of text at `size` px (one character at least)."""
    return display_token(token, max(1, int(px / (CHAR_PX * size / TICK_PX))))


def beam_tree(
    tree: dict[str, np.ndarray | list],
    title: str = "",
    width_px: int = 860,
    tick_px: int = TICK_PX,
    current: int | None = None,
) -> go.Figure:
    """A beam search as a tree: steps across, the 2K ranked extensions of each step down (best on top).

    tree: BeamTrace.tree()'s arrays (step, rank, parent, status, token, tokens, log_prob, score, best), N entries.
    Kept hypotheses are blue circles labelled with their last token, finished ones green diamonds labelled with
    their penalised score, pruned ones grey crosses; a line joins each to the hypothesis it extends; the best
    hypothesis's path is red. width_px: about how wide the plot is drawn (labels are shortened to fit a step).
    current: a step (from 0) to shade, the one a table beside the figure shows.
    """
    step = np.asarray(tree["step"], dtype=int)
    n = len(step)
    for key in ("rank", "parent", "status", "token", "tokens", "log_prob", "score", "best"):
        if len(tree[key]) != n:
            raise ValueError(f"tree[{key!r}] has {len(tree[key])} entries, tree['step'] has {n}")
    rank, parent = np.asarray(tree["rank"], dtype=int), np.asarray(tree["parent"], dtype=int)
    status, token, tokens = list(tree["status"]), list(tree["token"]), list(tree["tokens"])
    log_prob, score = np.asarray(tree["log_prob"], dtype=float), np.asarray(tree["score"], dtype=float)
    best = np.asarray(tree["best"], dtype=bool)
    steps = int(step.max()) + 1 if n else 1
    rows = int(rank.max()) + 1 if n else 1
    x = step + 1  # tokens written
    px_per_step = max(8.0, width_px / max(steps, 1))
    fig = go.Figure()
    for edge_status, color, dash in (("pruned", "#cfcfcf", "dot"), ("kept", "#8fb3d9", "solid")):
        xs: list[float | None] = []
        ys: list[float | None] = []
        for i in range(n):
            if parent[i] >= 0 and (status[i] == "pruned") == (edge_status == "pruned"):
                xs += [x[parent[i]], x[i], None]
                ys += [rank[parent[i]], rank[i], None]
        fig.add_trace(
            go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=color, width=1.5, dash=dash), hoverinfo="skip",
                       showlegend=False)
        )  # fmt: skip
    path = sorted(np.flatnonzero(best), key=lambda i: step[i])
    if path:
        fig.add_trace(
            go.Scatter(
                x=x[path],
                y=rank[path],
                mode="lines",
                line=dict(color=BEST_COLOR, width=4),
                name=_("best hypothesis"),
                hoverinfo="skip",
            )
        )
    hover = (
        _("step {step}, rank {rank}").format(step="%{x}", rank="%{customdata[3]}")
        + "<br>%{customdata[0]}<br>log p = %{customdata[1]:.3f}<br>"
        + _("score")
        + " = %{customdata[2]:.3f}<br>%{customdata[4]}<extra></extra>"
    )
    for kind, (name, color, symbol, size, text_color) in BEAM_STYLE.items():
        idx = [i for i in range(n) if status[i] == kind]
        if not idx:
            continue
        labels = [f"{score[i]:.2f}" if kind == "finished" else _fit(token[i], px_per_step - 4, tick_px) for i in idx]
        shown = html.escape(_(name), quote=False)  # "</s>" in a legend is markup to plotly
        fig.add_trace(
            go.Scatter(
                x=x[idx],
                y=rank[idx],
                mode="markers+text",
                name=shown,
                text=labels,
                textposition="top center",  # a finished one's label is its score, in the same place
                textfont=dict(size=tick_px, color=text_color),
                marker=dict(
                    symbol=symbol,
                    size=size,
                    color=color,
                    line=dict(width=[2.5 if best[i] else 0 for i in idx], color=BEST_COLOR),
                ),
                customdata=[
                    [" ".join(hover_token(t) for t in tokens[i]), log_prob[i], score[i], rank[i] + 1, shown]
                    for i in idx
                ],
                hovertemplate=hover,
            )
        )
    if current is not None:
        fig.add_vrect(x0=current + 0.5, x1=current + 1.5, fillcolor="#fff3b0", line_width=0, layer="below")
    fig.update_xaxes(
        title_text=_("step (tokens written)"),
        range=[0.4, steps + 0.6],
        dtick=1 if px_per_step >= 22 else 5,
        showgrid=False,
        zeroline=False,
    )
    fig.update_yaxes(
        title_text=_("rank (by log-probability)"),
        range=[rows - 0.4, -0.7],
        tickvals=list(range(rows)),
        ticktext=[str(r + 1) for r in range(rows)],
        showgrid=True,
        gridcolor="#eeeeee",
        zeroline=False,
    )
    fig.update_layout(
        title=title or _("Beam search: every step's hypotheses"),
        height=int(110 + ROW_PX * (rows + 0.6) + 40),
        legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom", font=dict(size=tick_px)),
        margin=dict(t=90, l=10, r=10, b=10),
        plot_bgcolor="white",
    )
    return readable(fig, tick_px)


def sampling_overview(
    tokens: Sequence[Sequence[str]],
    probs: np.ndarray,
    drawn: Sequence[int],
    drawn_tokens: Sequence[str],
    drawn_probs: Sequence[float],
    title: str = "",
    width_px: int = 860,
    tick_px: int = TICK_PX,
) -> go.Figure:
    """What every step drew from: steps across, candidates by probability down, coloured by probability.

    tokens (T, k) and probs (T, k): each step's k most probable candidates of the distribution the token was
    drawn from (after temperature, top-k and top-p); drawn (T,): the drawn candidate's index, or -1 when it
    was not among the k (it then shows in an extra row "other"); drawn_tokens, drawn_probs (T,): the drawn ones.
    The drawn cell of each step is outlined in red.
    """
    probs = np.asarray(probs, dtype=np.float32)
    if probs.ndim != 2 or len(tokens) != probs.shape[0] or any(len(t) != probs.shape[1] for t in tokens):
        raise ValueError(f"tokens must be (steps, k) like probs, got {len(tokens)} rows and probs {probs.shape}")
    T, k = probs.shape
    if not len(drawn) == len(drawn_tokens) == len(drawn_probs) == T:
        raise ValueError(f"drawn, drawn_tokens and drawn_probs need one entry per step ({T})")
    other = any(d < 0 for d in drawn)
    rows = k + int(other)
    z = np.full((rows, T), np.nan, dtype=np.float32)  # (rows, T): candidate rank down, step across
    z[:k] = probs.T
    px = max(8.0, width_px / max(T, 1))
    text = [[_fit(tokens[t][r], px - 6, tick_px) for t in range(T)] for r in range(k)]
    full = [[hover_token(tokens[t][r]) for t in range(T)] for r in range(k)]
    if other:
        z[k] = [drawn_probs[t] if drawn[t] < 0 else np.nan for t in range(T)]
        text.append([_fit(drawn_tokens[t], px - 6, tick_px) if drawn[t] < 0 else "" for t in range(T)])
        full.append([hover_token(drawn_tokens[t]) if drawn[t] < 0 else "" for t in range(T)])
    row_names = [str(r + 1) for r in range(k)] + ([_("other")] if other else [])
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(range(1, T + 1)),
            y=row_names,
            customdata=full,
            colorscale=COLORSCALE,
            zmin=0,
            zmax=1,
            hoverongaps=False,
            colorbar=dict(title=dict(text=_("probability")), thickness=14),
            hovertemplate=_("step {step}, candidate {rank}").format(step="%{x}", rank="%{y}")
            + "<br>%{customdata}<br>p = %{z:.3f}<extra></extra>",
        )
    )
    # each cell's word, dark on light cells and white on dark ones (plotly's own choice for a heatmap's text is a
    # grey lighter than the page's text, unreadable from the back of a hall)
    cells = [(t + 1, row_names[r], text[r][t], z[r, t]) for r in range(rows) for t in range(T) if text[r][t]]
    fig.add_trace(
        go.Scatter(
            x=[c[0] for c in cells],
            y=[c[1] for c in cells],
            text=[c[2] for c in cells],
            mode="text",
            textfont=dict(size=tick_px, color=["white" if v > DARK_CELL else TEXT_COLOR for *_c, v in cells]),
            hoverinfo="skip",
            showlegend=False,
        )
    )
    ys = [row_names[d] if d >= 0 else row_names[-1] for d in drawn]
    fig.add_trace(
        go.Scatter(
            x=list(range(1, T + 1)),
            y=ys,
            mode="markers",
            name=_("drawn"),
            marker=dict(symbol="square-open", size=1, color=DRAWN_COLOR, line=dict(width=3)),  # legend only
            hoverinfo="skip",
        )
    )  # fmt: skip
    # The outline is the whole cell, as wide as its word (a square marker was at most 40 px, narrower than the cells).
    rows_drawn = [d if d >= 0 else rows - 1 for d in drawn]
    fig.update_layout(
        shapes=[
            dict(type="rect", xref="x", yref="y", x0=t + 0.5, x1=t + 1.5, y0=r - 0.5, y1=r + 0.5,
                 line=dict(color=DRAWN_COLOR, width=3), fillcolor="rgba(0,0,0,0)", layer="above")
            for t, r in enumerate(rows_drawn)
        ]
    )  # fmt: skip
    fig.update_xaxes(title_text=_("step"), dtick=1 if px >= 22 else 5, showgrid=False, range=[0.5, T + 0.5])
    fig.update_yaxes(title_text=_("candidate (most probable first)"), type="category", autorange="reversed")
    fig.update_layout(
        title=title or _("What each token was drawn from"),
        height=int(130 + 40 * rows),
        showlegend=True,
        legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom", itemsizing="constant"),
        margin=dict(t=80, l=10, r=10, b=10, pad=0),  # the grey shows through: no padding band around it
        plot_bgcolor="#d9d9d9",
    )
    return readable(fig, tick_px)
