"""Attention heatmaps: one head, all heads of a layer, and the head average (every layer x head: overview_figs.py).

Rows are query positions (top to bottom), columns are key tokens. Axes are categorical with one label
"i: token" per position (so repeated tokens never merge), shown as the plain token in the tick text. Decoder rows
follow the app's one row convention (viz/tokens.Rows): labelled with the token each writes, the hover naming the
decoder input that wrote it ("i: <s> → la"); builders take a Rows or a plain list of query tokens.
Masked cells (the causal mask of decoder self-attention) are drawn as grey, not as zero weight.

Built for size: weights go to the browser as one float32 typed array per heatmap, every
heatmap of a figure shares one colour axis, and one hovertemplate per trace reads the token labels
from the axes; nothing is formatted per cell in Python.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from i18n import N_, _

from .pooling import causal_mask  # (Tq, Tk) True where a query may not look: keys after its own position
from .subplot_grid import axis_suffix, grid_layout
from .tokens import (
    CHAR_PX,
    HOVER_CHARS,
    LABEL,
    TEXT_COLOR,
    TICK_COLOR,
    TICK_PX,
    Rows,
    Ticks,
    as_rows,
    hover_token,
    label_classes,
    label_px,
    plain_token,
    readable_layout,
    token_ticks,
)

COLORSCALE = "Blues"
MASKED_COLOR = (
    "#d9d9d9"  # the plot background, seen through NaN cells; margin pad 0 (Streamlit's theme pads 8 px: a grey band)
)
GOLD_COLOR = "#d62728"  # open red circles: visible on every shade of Blues
LEGEND_PX = 34  # a one-line legend under the plot
KIND_TITLES = {  # marked only: translate where shown, _(KIND_TITLES[kind])
    "encoder_self": N_("Encoder self-attention"),
    "decoder_self": N_("Decoder self-attention (causal)"),
    "cross": N_("Cross-attention (decoder → encoder)"),
}


def window_mask(n_queries: int, n_keys: int, window: int | None, q_start: int = 0, k_start: int = 0) -> np.ndarray:
    """(Tq, Tk) True where a query of causal self-attention may not look: keys after it and, in a local layer, keys
    `window` or more positions before it (outside the sliding window: masked, drawn grey, not weight 0). Positions
    count from q_start and k_start (a window of a longer map)."""
    mask = causal_mask(n_queries, n_keys, q_start, k_start)
    if window is None:
        return mask
    q = np.arange(q_start, q_start + n_queries)[:, None]
    return mask | (q - np.arange(k_start, k_start + n_keys)[None, :] >= window)


def layer_masks(kind: str, n_queries: int, n_keys: int, windows: Sequence[int | None] | None) -> np.ndarray | None:
    """The mask of every layer of one kind, (L, 1, Tq, Tk) for the overview (a local layer's window, the causal
    mask of decoder self-attention), (Tq, Tk) when every layer has the same one, None when nothing is masked."""
    if not windows or all(w is None for w in windows):
        return causal_mask(n_queries, n_keys) if kind == "decoder_self" else None
    return np.stack([window_mask(n_queries, n_keys, w) for w in windows])[:, None]


def layer_names(n_layers: int, windows: Sequence[int | None] | None = None) -> list[str]:
    """ "layer i", or "layer i · local (window w)" / "layer i · global" for a model with local layers: the layer
    menu's and the overview's names."""
    if not windows or all(w is None for w in windows):
        return [_("layer {i}").format(i=i) for i in range(n_layers)]
    return [
        _("layer {i} · global").format(i=i) if w is None else _("layer {i} · local ({w})").format(i=i, w=w)
        for i, w in zip(range(n_layers), windows)
    ]


def _check(weights: np.ndarray, query_tokens: Sequence[str], key_tokens: Sequence[str], ndim: int) -> None:
    if weights.ndim != ndim:
        raise ValueError(f"weights must have {ndim} axes, got shape {weights.shape}")
    if weights.shape[-2] != len(query_tokens):
        raise ValueError(f"weights have {weights.shape[-2]} query rows but there are {len(query_tokens)} query tokens")
    if weights.shape[-1] != len(key_tokens):
        raise ValueError(f"weights have {weights.shape[-1]} key columns but there are {len(key_tokens)} key tokens")


def token_labels(tokens: Sequence[str], max_chars: int = HOVER_CHARS, start: int = 0) -> list[str]:
    """Unique category labels "i: token" for one side (plotly merges equal labels, so the index stays); positions
    count from `start` (a window of a longer map)."""
    return [LABEL.format(i=i, token=hover_token(t, max_chars)) for i, t in enumerate(tokens, start)]


def _z(weights: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """The weights as float32 (sent as a typed array), masked cells NaN (drawn as the grey background)."""
    z = np.asarray(weights, dtype=np.float32)
    return np.where(mask, np.float32(np.nan), z) if mask is not None else z


def _heatmap_trace(
    weights: np.ndarray,
    q_labels: Sequence[str] | None,
    k_labels: Sequence[str] | None,
    mask,
    coloraxis: str = "coloraxis",
    what: str = "",
) -> go.Heatmap:
    """One heatmap on categorical axes: x = key labels, y = query labels, both "i: token" (None: positions).

    Hover reads the labels from the axes and the weight from z, through one hovertemplate: nothing is
    built per cell in Python, and the browser gets Tq + Tk strings and one float32 array. Masked cells
    are NaN: not drawn (the grey plot background shows) and without hover.
    """
    return go.Heatmap(
        z=_z(weights, mask),
        x=None if k_labels is None else list(k_labels),
        y=None if q_labels is None else list(q_labels),
        coloraxis=coloraxis,
        hoverongaps=False,
        hovertemplate=what + _("query %{y}<br>key %{x}<br>weight %{z:.3f}") + "<extra></extra>",
    )


def _coloraxis(showscale: bool = True) -> dict:
    """The one colour axis every heatmap of a figure shares: weights 0..1 on COLORSCALE."""
    return dict(
        colorscale=COLORSCALE,
        cmin=0.0,
        cmax=1.0,
        showscale=showscale,
        colorbar=dict(title=dict(text=_("weight")), thickness=14, tickfont=dict(size=TICK_PX, color=TICK_COLOR)),
    )


# -- geometry: square cells, height from the rows, everything inside a projector's screen -------------------
MAX_HEIGHT = 520  # px of one chart: below a compact header, a 1366x768 screen shows it whole
MAX_WIDTH = 860  # px of plot a 1366 px window offers beside the open sidebar (colour bar and labels aside)
MAX_CELL = 36  # px: short inputs get large cells, not a giant chart
TITLE_PX, AXIS_TITLE_PX, LABEL_ROW_PX = 56, 34, 30  # px: title margin, x-axis title, one row of x labels
WIDER_CELLS = (1.2, 1.4, 1.6, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)  # width / height tried when x labels are dropped


@dataclass(frozen=True)
class Geometry:
    """The size of a heatmap: cell edge in px (cells are square), figure height, and both axes' ticks."""

    cell: float
    height: int
    x: Ticks
    y: Ticks
    ratio: float = 1.0  # cell width / height: up to 1.6 where that lets every x label show side by side


def heatmap_geometry(
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    max_height: int = MAX_HEIGHT,
    max_width: int = MAX_WIDTH,
    extra_height: int = 0,
    tick_px: int = TICK_PX,
) -> Geometry:
    """Square cells as large as fit (at most MAX_CELL, more in a wider box); the height follows the number of rows.

    The figure is at most max_height + extra_height tall (extra: a legend row) and its plot at most max_width
    wide, whatever the number of tokens: long inputs get small cells and every n-th tick label (token_ticks).
    tick_px: the tick labels' size (larger in presentation mode).
    """
    nq, nk = max(1, len(query_tokens)), max(1, len(key_tokens))
    label_px = LABEL_ROW_PX
    for _attempt in range(2):  # once more with room for vertical x labels, if they turned out to need it
        chrome = TITLE_PX + AXIS_TITLE_PX + label_px
        cell = max(1.0, min(MAX_CELL * max(1.0, max_width / MAX_WIDTH), (max_height - chrome) / nq, max_width / nk))
        x = token_ticks(key_tokens, cell, size=tick_px)
        if x.angle == 0 or label_px > LABEL_ROW_PX:
            break
        label_px = int(
            min(120, max(len(plain_token(key_tokens[i])) for i in x.vals) * CHAR_PX * tick_px / TICK_PX + 10)
        )
    y = token_ticks(query_tokens, cell, horizontal=False, size=tick_px)
    ratio = 1.0
    if x.step > 1:  # labels dropped (wide ones like <unk>, </s>, <id 4>, or cells below the tick gap): widen the
        # cells, never past the width there is (height is what a projector lacks; a few wide columns cost nothing),
        # preferring the narrowest cells that label every token, upright if that fits too
        found = None
        for r in WIDER_CELLS:  # tall maps (long outputs) need the most
            wider = token_ticks(key_tokens, cell * r, size=tick_px)
            if wider.step == 1 and nk * cell * r <= max_width:
                found = found or (wider, r)
                if wider.angle == 0:
                    found = (wider, r)
                    break
        if found:
            x, ratio = found
    return Geometry(cell, int(round(nq * cell + chrome + extra_height)), x, y, ratio)


def geometry_rules() -> dict:
    """heatmap_geometry (at its default sizes), token_ticks and label_px as data: the lecture pack's page lays out a
    typed input's maps with them (pack_live.js) as attention_heatmap lays out the app's."""
    return {
        **label_classes(),
        "max_height": MAX_HEIGHT,
        "max_width": MAX_WIDTH,
        "max_cell": MAX_CELL,
        "title_px": TITLE_PX,
        "axis_title_px": AXIS_TITLE_PX,
        "label_row_px": LABEL_ROW_PX,
        "legend_px": LEGEND_PX,
        "colorbar_px": COLORBAR_PX,
        "wider": list(WIDER_CELLS),
    }


def _token_axes(geo: Geometry, nq: int, nk: int, i: int = 1, x_labels: bool = True, y_labels: bool = True) -> dict:
    """Layout entries for the two token axes of subplot i (from 1, numbered row by row as make_subplots does).

    Categorical axes (the traces' x and y are the "i: token" labels); numeric tick values are category positions.
    Fixed ranges: exactly the cells (markers over them would otherwise pad the range with an empty border).
    Square cells (or geo.ratio times as wide as tall): the x axis keeps y's scale, so the plot shrinks to fit
    rather than stretch. Returned as a dict for one fig.update_layout of every axis: an update per axis and
    property (plotly walks the figure each time) cost a grid of heads more than the rest of its page.
    """
    suffix = "" if i == 1 else str(i)

    def axis(ticks: Ticks, shown: bool, **more) -> dict:
        return dict(
            type="category",
            showticklabels=shown,
            showgrid=False,
            zeroline=False,
            automargin=True,
            title=dict(font=dict(color=TEXT_COLOR)),
            **ticks.axis(),
            constrain="domain",
            **more,
        )

    return {
        f"xaxis{suffix}": axis(
            geo.x,
            x_labels,
            range=[-0.5, nk - 0.5],
            side="bottom",
            scaleanchor=f"y{suffix}",
            scaleratio=geo.ratio,
            constraintoward="left",  # a figure laid out larger in the browser keeps the map beside its labels
        ),
        f"yaxis{suffix}": axis(geo.y, y_labels, range=[nq - 0.5, -0.5], constraintoward="top"),
    }


def _legend_marks(
    mask: np.ndarray | None,
    gold: Sequence[tuple[int, int]] | None,
    q_labels: Sequence[str],
    k_labels: Sequence[str],
    cell: float,
    outputs: Sequence[str] | None = None,
) -> list[go.Scatter]:
    """Legend entries for what the colour scale does not explain: masked cells, and gold-alignment markers.

    outputs: the output tokens the gold pairs' target indices name, one per row (their hover says which output token
    comes from which source token); None: the row labels."""
    marks = []
    if mask is not None and mask.any():
        r, c = np.argwhere(mask)[0]  # drawn on a masked cell, in its own grey: only the legend entry shows
        marks.append(
            go.Scatter(
                x=[k_labels[c]],
                y=[q_labels[r]],
                mode="markers",
                name=_("masked (weight 0, not attended)"),
                marker=dict(symbol="square", size=14, color=MASKED_COLOR, line=dict(width=0)),
                hoverinfo="skip",
            )
        )
    if gold:
        pairs = [(s, t) for s, t in gold if 0 <= t < len(q_labels) and 0 <= s < len(k_labels)]
        outputs = token_labels(outputs) if outputs is not None else list(q_labels)
        marks.append(
            go.Scatter(
                x=[k_labels[s] for s, _ in pairs],
                y=[q_labels[t] for _, t in pairs],
                customdata=[outputs[t] if t < len(outputs) else q_labels[t] for _, t in pairs],
                mode="markers",
                name=_("gold alignment (where the output token comes from)"),
                marker=dict(
                    symbol="circle-open", size=max(6.0, min(18.0, 0.6 * cell)), color=GOLD_COLOR, line=dict(width=2)
                ),
                hovertemplate=_("gold: output token %{customdata}<br>comes from source token %{x}") + "<extra></extra>",
            )
        )
    return marks


LEGEND = dict(orientation="h", x=0, y=1.0, yanchor="bottom", xanchor="left", font=dict(size=TICK_PX, color=TEXT_COLOR))


COLORBAR_PX = 110  # a colour bar with its tick labels and title, and the gap before it


def snug_width(geo: Geometry, query_tokens: Sequence[str], nk: int, tick_px: int, max_width: int) -> int:
    """The width in px of a heatmap figure that holds its plot (nk cells of geo.cell x geo.ratio), the query labels
    and axis title on the left and the colour bar on the right: about what plotly's automargin gives them."""
    labels = max((label_px(plain_token(query_tokens[i]), tick_px) for i in geo.y.vals), default=0.0)
    left = labels + AXIS_TITLE_PX + 16
    return int(min(max_width + left + COLORBAR_PX, left + nk * geo.cell * geo.ratio + COLORBAR_PX + 20))


def attention_heatmap(
    weights: np.ndarray,
    query_tokens: Rows | Sequence[str],
    key_tokens: Sequence[str],
    title: str = "",
    mask: np.ndarray | None = None,
    query_label: str = N_("query"),
    key_label: str = N_("key"),
    gold: Sequence[tuple[int, int]] | None = None,
    max_height: int = MAX_HEIGHT,
    max_width: int = MAX_WIDTH,
    tick_px: int = TICK_PX,
    snug: bool = False,
    start: tuple[int, int] = (0, 0),
) -> go.Figure:
    """One (Tq, Tk) attention map as a heatmap with square cells; mask (Tq, Tk) True marks cells drawn as masked.

    query_tokens: the rows, a Rows (viz/tokens.capture_rows: the tokens written, or the source tokens; its own axis
    title) or a plain list of query tokens (titled from query_label).
    gold: (key index, query index) pairs drawn as open circles over the cells (a demo's gold alignment), query index
    j being the row that writes output token j.
    query_label, key_label: what the rows and columns are ("source", "output"), translated here.
    The figure is at most max_height (+ a legend row) tall and max_width wide, whatever the number of tokens.
    snug: the figure as wide as its plot, labels and colour bar (layout.width), so that the colour bar sits beside
    the map rather than at the far edge of a wide window (a page shows it at that width).
    start: (first query, first key) position: the map is a window of a longer one (labels and hover name the
    positions in the whole input; gold indices stay the window's).
    """
    rows = as_rows(query_tokens)
    query_tokens = rows.tokens
    _check(weights, query_tokens, key_tokens, 2)
    if mask is not None and mask.shape != weights.shape:
        raise ValueError(f"mask shape {mask.shape} differs from weights shape {weights.shape}")
    q_labels, k_labels = rows.labels(start=start[0]), token_labels(key_tokens, start=start[1])
    legend = (mask is not None and bool(mask.any())) or bool(gold)
    geo = heatmap_geometry(
        query_tokens, key_tokens, max_height, max_width, extra_height=LEGEND_PX if legend else 0, tick_px=tick_px
    )
    marks = _legend_marks(mask, gold, q_labels, k_labels, geo.cell, query_tokens if rows.inputs else None)
    layout = _token_axes(geo, len(query_tokens), len(key_tokens))
    layout["xaxis"]["title"]["text"] = _("{side} tokens (attended to)").format(side=_(key_label))
    layout["yaxis"]["title"]["text"] = rows.title() or _("{side} tokens (attending)").format(side=_(query_label))
    layout.update(
        title=dict(text=title, font=dict(color=TEXT_COLOR)),
        height=geo.height,
        plot_bgcolor=MASKED_COLOR,
        coloraxis=_coloraxis(),
        showlegend=legend,
        margin=dict(l=10, r=10, t=TITLE_PX + (LEGEND_PX if legend else 0), b=10, pad=0),  # see MASKED_COLOR
    )
    if marks:
        layout["legend"] = copy.deepcopy(LEGEND)
    if snug:  # never narrower than the title (bold, a little wider than label_px says) or the legend's line
        titled = label_px(title, tick_px + 3) * 1.15 + 20
        least = [titled, max([titled, *(label_px(m.name, tick_px) + 40 for m in marks)])]
        layout["width"] = int(max(snug_width(geo, query_tokens, len(key_tokens), tick_px, max_width), least[1]))
        layout["meta"] = dict(least_width=least)  # without, with the legend: the pack's typed input's width uses it
    # One Figure from finished data and layout: plotly validates each once (updates walk the figure every time).
    return go.Figure(
        data=[_heatmap_trace(weights, q_labels, k_labels, mask), *marks], layout=readable_layout(layout, tick_px)
    )


def head_grid(
    weights: np.ndarray,
    query_tokens: Rows | Sequence[str],
    key_tokens: Sequence[str],
    title: str = "",
    mask: np.ndarray | None = None,
    columns: int = 4,
    max_height: int = MAX_HEIGHT,
    max_width: int = MAX_WIDTH,
    tick_px: int = TICK_PX,
) -> go.Figure:
    """All heads of one layer, (H, Tq, Tk), as a grid of heatmaps sharing one colour scale (at most `columns` a row).

    Tick labels only where they cannot run into a neighbour: token labels on the left column's y axes and
    the bottom row's x axes (the panels share both axes), every n-th when cells are small.
    query_tokens: the rows, as attention_heatmap takes them (a Rows or a plain list).
    """
    rows_of = as_rows(query_tokens)
    query_tokens = rows_of.tokens
    _check(weights, query_tokens, key_tokens, 3)
    n_heads = weights.shape[0]
    gap = 34  # px between panels: room for a panel's title
    ylabel_px = (
        max(len(plain_token(t)) for t in query_tokens) * CHAR_PX * tick_px / TICK_PX + 30 if len(query_tokens) else 30
    )
    nq, nk = max(1, len(query_tokens)), max(1, len(key_tokens))
    free_h = max_height - 14 - TITLE_PX - AXIS_TITLE_PX - LABEL_ROW_PX

    def cell_for(cols: int) -> float:  # the cell edge a layout of `cols` columns allows
        rows = -(-n_heads // cols)
        return min((free_h - gap * (rows - 1)) / (rows * nq), (max_width - ylabel_px - 12 * (cols - 1)) / (cols * nk))

    # Up to `columns` per row, as many as keep the cells largest (wide inputs: fewer columns, more rows).
    cols = max(range(1, min(columns, n_heads) + 1), key=lambda c: (round(cell_for(c), 1), c))
    rows = -(-n_heads // cols)
    panel_h = (free_h - gap * (rows - 1)) / rows  # 14 of max_height: the panels' titles
    panel_w = (max_width - ylabel_px - 12 * (cols - 1)) / cols
    geo = heatmap_geometry(
        query_tokens, key_tokens, int(panel_h + TITLE_PX + AXIS_TITLE_PX + LABEL_ROW_PX), int(panel_w), tick_px=tick_px
    )
    plot_h = rows * geo.cell * len(query_tokens) + gap * (rows - 1)
    height = int(round(geo.height - geo.cell * len(query_tokens) + plot_h)) + 14
    layout = grid_layout(
        rows,
        cols,
        horizontal_spacing=0.015,
        vertical_spacing=min(0.3, gap / max(plot_h, 1)) if rows > 1 else 0.0,
        titles=[_("head {h}").format(h=h) for h in range(n_heads)],
        shared_x=True,
        shared_y=True,
    )
    q_labels, k_labels = rows_of.labels(), token_labels(key_tokens)
    traces = [
        _heatmap_trace(weights[h], q_labels, k_labels, mask, what=_("head {h}").format(h=h) + "<br>")
        for h in range(n_heads)
    ]
    for h, trace in enumerate(traces):  # head h in panel h + 1, row by row
        trace.update(xaxis=f"x{axis_suffix(h + 1)}", yaxis=f"y{axis_suffix(h + 1)}")
    for i in range(1, rows * cols + 1):
        below = i + cols > n_heads  # no panel under this one: it carries the x labels
        for name, axis in _token_axes(geo, len(query_tokens), len(key_tokens), i, below, (i - 1) % cols == 0).items():
            layout[name] = {**layout.get(name, {}), **axis}
    for note in layout.get("annotations", []):
        note["font"] = dict(size=tick_px, color=TEXT_COLOR)
    layout.update(
        title=dict(text=title, font=dict(color=TEXT_COLOR)),
        height=height,
        plot_bgcolor=MASKED_COLOR,
        coloraxis=_coloraxis(),
        margin=dict(l=10, r=10, t=TITLE_PX + 14, b=10, pad=0),  # see MASKED_COLOR
    )
    return go.Figure(data=traces, layout=readable_layout(layout, tick_px))


def head_average(weights: np.ndarray) -> np.ndarray:
    """Mean over heads: (H, Tq, Tk) -> (Tq, Tk)."""
    if weights.ndim != 3:
        raise ValueError(f"weights must be (heads, queries, keys), got shape {weights.shape}")
    return weights.mean(axis=0)


BERTVIZ_MAX_WEIGHTS = 400_000  # about 1.6 MB of bertviz HTML: above it a page shows one layer at a time


def bertviz_fits(*maps: np.ndarray) -> bool:
    """Whether bertviz's views of every layer of these attention arrays stay within BERTVIZ_MAX_WEIGHTS weights."""
    return sum(int(np.prod(m.shape)) for m in maps) <= BERTVIZ_MAX_WEIGHTS
