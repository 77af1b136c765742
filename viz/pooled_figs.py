"""Attention maps of long inputs: pooled into blocks (viz/pooling.py), and the per-head summaries of every layer.

A map longer than pooling.MAX_CELLS a side is drawn as at most MAX_CELLS x MAX_CELLS blocks: the colour is the
pooling chosen (each block's max or mean), the hover names the range of query and key positions the block covers
(with their first and last tokens) and gives both poolings, and the title says which pooling the colours show.
A window of the map (a range of queries and keys) is drawn at full resolution by attention_figs.attention_heatmap;
here it is outlined on the pooled map.

Built for size as attention_figs is: z and customdata go to the browser as float32 typed arrays, one hovertemplate
per trace reads the cell's labels from the axes (one string per row and per column, never one per cell).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import N_, _

from .attention_figs import (
    AXIS_TITLE_PX,
    COLORBAR_PX,
    LABEL_ROW_PX,
    MASKED_COLOR,
    MAX_CELL,
    MAX_HEIGHT,
    MAX_WIDTH,
    TITLE_PX,
    _coloraxis,
)
from .overview_figs import CELL_NOTES
from .pooling import HOWS, Pooled
from .subplot_grid import axis_suffix, grid_layout
from .tokens import FONTS, MIN_TICK_GAP_PX, TEXT_COLOR, TICK_PX, hover_token, label_px, readable_layout

HOW_NAMES = {"max": N_("max"), "mean": N_("mean")}  # marked only: translated where shown
WINDOW_COLOR = "#d62728"  # the window's outline on the pooled map: visible on every shade of Blues
SUMMARIES = {  # a head's summary -> (its name, whether it is a share of the weight 0..1), in the order shown
    "first_token": (N_("weight on the first token"), True),
    "previous_token": (N_("weight on the previous token"), True),
    "diagonal": (N_("weight on its own position"), True),
    "entropy": (N_("entropy (nats)"), False),
    "mean_distance": (N_("mean distance (positions)"), False),
}
ALIASES = {"distance": "mean_distance", "first": "first_token", "previous": "previous_token"}  # other spellings


def range_labels(edges: np.ndarray, tokens: Sequence[str], max_chars: int = 12) -> list[str]:
    """One unique category label per block: "i: token" for a block of one position, "i–j: first … last" for more."""
    if int(edges[-1]) != len(tokens):
        raise ValueError(f"the blocks cover {int(edges[-1])} positions but there are {len(tokens)} tokens")
    out = []
    for lo, hi in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True):
        first = hover_token(tokens[lo], max_chars)
        if hi - lo == 1:
            out.append(f"{lo}: {first}")
        else:
            out.append(f"{lo}–{hi - 1}: {first} … {hover_token(tokens[hi - 1], max_chars)}")
    return out


def pooling_note(pooled: Pooled, how: str) -> str:
    """What one cell is, for a title: " (each cell: the max of 4 × 4 positions)" (translated)."""
    a, b = pooled.blocks
    return _(CELL_NOTES[how]).format(a=a, b=b)


def _hover(how: str, what: str = "") -> str:
    """One template for every cell: the block's positions from the axes, both poolings (z and customdata)."""
    other = HOWS[1 - HOWS.index(how)]
    return (
        what
        + _("queries %{y}<br>keys %{x}")
        + "<br>"
        + _("{how} weight {z} · {other} {c}").format(
            how=_(HOW_NAMES[how]), other=_(HOW_NAMES[other]), z="%{z:.3f}", c="%{customdata:.3f}"
        )
        + "<extra></extra>"
    )


def _position_ticks(edges: np.ndarray, cell_px: float, tick_px: int) -> dict:
    """Tick labels of a pooled axis: the first position of every n-th block, n such that labels keep apart."""
    n = len(edges) - 1
    step = max(1, math.ceil(MIN_TICK_GAP_PX * tick_px / TICK_PX * 2.2 / max(cell_px, 1e-6)))
    vals = list(range(0, n, step))
    return dict(tickmode="array", tickvals=vals, ticktext=[str(int(edges[i])) for i in vals], tickangle=0)


def _axis(ticks: dict, shown: bool = True, **more) -> dict:
    base = dict(type="category", showgrid=False, zeroline=False, automargin=True, showticklabels=shown,
                title=dict(font=dict(color=TEXT_COLOR)), constrain="domain", **ticks)  # fmt: skip
    return {**base, **more}


def window_box(pooled: Pooled, window: tuple[int, int, int, int], xref: str = "x", yref: str = "y") -> dict:
    """A rectangle (layout shape) around the blocks that hold window (q0, q1, k0, k1), inclusive positions."""
    q0, q1, k0, k1 = window
    side = lambda edges, p: int(np.searchsorted(edges, p, side="right")) - 1  # noqa: E731 - the block of position p
    return dict(type="rect", xref=xref, yref=yref, line=dict(color=WINDOW_COLOR, width=2), fillcolor="rgba(0,0,0,0)",
                x0=side(pooled.k_edges, k0) - 0.5, x1=side(pooled.k_edges, k1) + 0.5,
                y0=side(pooled.q_edges, q0) - 0.5, y1=side(pooled.q_edges, q1) + 0.5)  # fmt: skip


def pooled_heatmap(
    pooled: Pooled,
    how: str,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    title: str = "",
    query_label: str = N_("query"),
    key_label: str = N_("key"),
    window: tuple[int, int, int, int] | None = None,
    max_height: int = MAX_HEIGHT,
    max_width: int = MAX_WIDTH,
    tick_px: int = TICK_PX,
) -> go.Figure:
    """One pooled (nq, nk) map as a heatmap of square cells: colours the `how` pooling ("max" or "mean"), the hover
    both and the positions each block covers; window (q0, q1, k0, k1): outlined. Tokens: the whole map's."""
    z, other = pooled.of(how), pooled.of(HOWS[1 - HOWS.index(how)])
    if z.ndim != 2:
        raise ValueError(f"a pooled map must have 2 axes, got shape {z.shape}")
    q_labels, k_labels = range_labels(pooled.q_edges, query_tokens), range_labels(pooled.k_edges, key_tokens)
    nq, nk = z.shape
    chrome = TITLE_PX + AXIS_TITLE_PX + LABEL_ROW_PX
    cell = max(1.0, min(MAX_CELL, (max_height - chrome) / nq, max_width / nk))
    layout = dict(
        title=dict(text=title + pooling_note(pooled, how), font=dict(color=TEXT_COLOR)),
        xaxis=_axis(_position_ticks(pooled.k_edges, cell, tick_px), range=[-0.5, nk - 0.5], side="bottom",
                    scaleanchor="y", constraintoward="left",
                    title=dict(text=_("{side} positions (attended to)").format(side=_(key_label)))),
        yaxis=_axis(_position_ticks(pooled.q_edges, cell, tick_px), range=[nq - 0.5, -0.5], constraintoward="top",
                    title=dict(text=_("{side} positions (attending)").format(side=_(query_label)))),
        height=int(round(nq * cell + chrome)),
        plot_bgcolor=MASKED_COLOR,
        coloraxis=_coloraxis(),
        margin=dict(l=10, r=10, t=TITLE_PX, b=10, pad=0),
        shapes=[window_box(pooled, window)] if window is not None else [],
    )  # fmt: skip
    # as wide as the map, its position labels and the colour bar (shown at that width: the bar beside the map), and
    # never narrower than the title
    snug = 4 * label_px("0000", tick_px) + AXIS_TITLE_PX + nk * cell + COLORBAR_PX + 20
    layout["width"] = int(max(snug, label_px(layout["title"]["text"], tick_px + 3) * 1.15 + 40))
    trace = dict(type="heatmap", z=z, customdata=other, x=k_labels, y=q_labels, coloraxis="coloraxis",
                 hoverongaps=False, hovertemplate=_hover(how))  # fmt: skip
    return go.Figure(data=[trace], layout=readable_layout(layout, tick_px))


def pooled_grid(
    pooled: Pooled,
    how: str,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    title: str = "",
    columns: int = 4,
    max_height: int = MAX_HEIGHT,
    max_width: int = MAX_WIDTH,
    tick_px: int = TICK_PX,
) -> go.Figure:
    """All heads of one layer, pooled (H, nq, nk), as a grid of thumbnails on one colour scale, `columns` a row."""
    z_all, other_all = pooled.of(how), pooled.of(HOWS[1 - HOWS.index(how)])
    if z_all.ndim != 3:
        raise ValueError(f"pooled heads must be (heads, queries, keys), got shape {z_all.shape}")
    n_heads, nq, nk = z_all.shape
    cols = max(1, min(columns, n_heads))
    rows = -(-n_heads // cols)
    gap, left = 34, 60  # px between panels (a panel's title), and the query positions' labels
    chrome = TITLE_PX + AXIS_TITLE_PX + LABEL_ROW_PX + 14
    cell = max(0.5, min((max_height - chrome - gap * (rows - 1)) / (rows * nq), (max_width - left) / (cols * nk)))
    plot_h = rows * nq * cell + gap * (rows - 1)
    layout = grid_layout(rows, cols, horizontal_spacing=0.015, vertical_spacing=min(0.3, gap / plot_h) if rows > 1
                         else 0.0, titles=[_("head {h}").format(h=h) for h in range(n_heads)], shared_x=True,
                         shared_y=True)  # fmt: skip
    q_labels, k_labels = range_labels(pooled.q_edges, query_tokens), range_labels(pooled.k_edges, key_tokens)
    traces = []
    for h in range(n_heads):
        s = axis_suffix(h + 1)
        traces.append(dict(type="heatmap", z=z_all[h], customdata=other_all[h], x=k_labels, y=q_labels,
                           coloraxis="coloraxis", hoverongaps=False, xaxis=f"x{s}", yaxis=f"y{s}",
                           hovertemplate=_hover(how, _("head {h}").format(h=h) + "<br>")))  # fmt: skip
    for i in range(1, rows * cols + 1):
        s = axis_suffix(i)
        below, first = i + cols > n_heads, (i - 1) % cols == 0
        x = _axis(_position_ticks(pooled.k_edges, cell, tick_px), below, range=[-0.5, nk - 0.5],
                  scaleanchor=f"y{s}", constraintoward="left")  # fmt: skip
        y = _axis(_position_ticks(pooled.q_edges, cell, tick_px), first, range=[nq - 0.5, -0.5], constraintoward="top")
        layout[f"xaxis{s}"] = {**layout.get(f"xaxis{s}", {}), **x}
        layout[f"yaxis{s}"] = {**layout.get(f"yaxis{s}", {}), **y}
    for note in layout.get("annotations", []):
        note["font"] = dict(size=tick_px, color=TEXT_COLOR)
    layout.update(
        title=dict(text=title + pooling_note(pooled, how), font=dict(color=TEXT_COLOR)),
        height=int(round(plot_h + chrome)),
        plot_bgcolor=MASKED_COLOR,
        coloraxis=_coloraxis(),
        margin=dict(l=10, r=10, t=TITLE_PX + 14, b=10, pad=0),
    )
    return go.Figure(data=traces, layout=readable_layout(layout, tick_px))


def present_summaries(summary: Mapping[str, np.ndarray]) -> list[str]:
    """The keys of SUMMARIES that `summary` holds (under their own names or an alias), in SUMMARIES' order."""
    names = {ALIASES.get(k, k) for k in summary}
    return [k for k in SUMMARIES if k in names]


def summary_map(summary: Mapping[str, np.ndarray], shown: str, title: str = "") -> go.Figure:
    """Per-head summaries of every layer, (L, H) each: rows layers, columns heads, coloured by `shown` (a key of
    SUMMARIES), every summary of the head in the hover. Shares are drawn on 0..1, the others on their own range."""
    summary = {ALIASES.get(k, k): v for k, v in summary.items()}
    known = [k for k in SUMMARIES if k in summary]
    if shown not in known:
        raise ValueError(f"no summary {shown!r}: there are {sorted(summary)}")
    z = np.asarray(summary[shown], dtype=np.float32)
    if z.ndim != 2:
        raise ValueError(f"summaries must be (layers, heads), got shape {z.shape}")
    L, H = z.shape
    data = np.stack([np.asarray(summary[k], dtype=np.float32) for k in known], axis=-1)  # (L, H, summaries)
    lines = [f"{_(SUMMARIES[k][0])}: %{{customdata[{i}]:{'.0%' if SUMMARIES[k][1] else '.3g'}}}"
             for i, k in enumerate(known)]  # fmt: skip
    share = SUMMARIES[shown][1]
    trace = go.Heatmap(
        z=z,
        customdata=data.tolist(),  # L x H x a few numbers: plain lists (a typed array of three axes is not read)
        x=list(range(H)),
        y=list(range(L)),
        zmin=0.0 if share else None,
        zmax=1.0 if share else None,
        colorscale="Reds",
        texttemplate="%{z:.0%}" if share else "%{z:.2g}",
        hovertemplate=_("layer %{y}, head %{x}") + "<br>" + "<br>".join(lines) + "<extra></extra>",
        colorbar=dict(title=dict(text=_(SUMMARIES[shown][0]))),
    )
    layout = dict(
        title=dict(text=title, font=dict(color=TEXT_COLOR)),
        xaxis=dict(title=dict(text=_("head")), dtick=1),
        yaxis=dict(title=dict(text=_("layer")), dtick=1, autorange="reversed"),
        height=max(260, 40 * L + 140),
        **FONTS,
    )
    return go.Figure(data=[trace], layout=layout)
