"""Figures for the computation inside one attention head: numpy in, plotly out.

Vectors are drawn as heatmaps with a dimension axis (diverging colours, zero white); per-key
quantities as bars over the key tokens, labelled "index: token" so repeated tokens stay apart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _

from .tokens import FONT_FAMILY, TEXT_COLOR, TICK_PX, display_token, indexed

DIVERGING = "RdBu_r"
MASKED_COLOR = "#bdbdbd"
SCALED_COLOR, RAW_COLOR = "#1f77b4", "#ff7f0e"


def _check_tokens(n: int, tokens: Sequence[str], what: str) -> None:
    if n != len(tokens):
        raise ValueError(f"{n} {what} but {len(tokens)} key tokens")


def _vector_heatmap(z: np.ndarray, labels: Sequence[str], zmax: float, showscale: bool, axes: str = "") -> go.Heatmap:
    return go.Heatmap(
        z=z,
        x=np.arange(z.shape[1]),
        y=np.arange(z.shape[0]),
        zmin=-zmax,
        zmax=zmax,
        zmid=0,
        colorscale=DIVERGING,
        showscale=showscale,
        xaxis="x" + axes,
        yaxis="y" + axes,
        customdata=np.repeat(np.array(labels, dtype=object)[:, None], z.shape[1], 1),
        hovertemplate="%{customdata}<br>" + _("dimension %{x}<br>value %{z:.4f}") + "<extra></extra>",
        colorbar=dict(thickness=12, len=0.8) if showscale else None,
    )


def _zmax(*arrays: np.ndarray) -> float:
    m = max(float(np.abs(a).max()) if a.size else 0.0 for a in arrays)
    return m if m > 0 else 1.0


def _layout(title: str, height: int, top: int = 70, **extra) -> dict:
    """A whole layout as one dict: the figure is built in one constructor call (plotly's update_* calls are slow)."""
    return dict(
        title=dict(text=title, font=dict(family=FONT_FAMILY)),
        height=height,
        margin=dict(l=10, r=10, t=top, b=10, pad=0),  # a grey background (the mask) shows no padding band
        font=dict(family=FONT_FAMILY),
        hoverlabel=dict(font=dict(family=FONT_FAMILY)),
        **extra,
    )


GAP_PX = 52  # between two stacked panels: the lower one's title at presentation mode's 18 px, clear of both


def _rows_figure(
    top: np.ndarray,
    top_labels: Sequence[str],
    bottom: np.ndarray,
    bottom_labels: Sequence[str],
    titles: tuple[str, str],
    title: str,
    shapes: Sequence[dict] = (),
    xtitle: str = "",
) -> go.Figure:
    """Two stacked vector heatmaps (top on axes x/y, bottom on x2/y2) sharing the dimension axis and one colour scale."""
    n_top, n_bottom = max(top.shape[0], 1), max(bottom.shape[0], 1)
    height = int(min(900, 190 + 26 * (n_top + n_bottom)))
    gap = GAP_PX / (height - 80 - 60)  # the plot area's fraction that holds the lower title (18 px in presentation)
    split = (1 - gap) * n_bottom / (n_top + n_bottom)  # the bottom panel's share of the height
    zmax = _zmax(top, bottom)
    y_axis = lambda labels, domain, anchor: dict(  # noqa: E731
        tickmode="array",
        tickvals=list(range(len(labels))),
        ticktext=list(labels),
        autorange="reversed",
        domain=domain,
        anchor=anchor,
    )
    layout = _layout(
        title,
        height,
        top=80,
        shapes=list(shapes),
        xaxis=dict(anchor="y", matches="x2", showticklabels=False, ticks="", showgrid=False),
        yaxis=y_axis(top_labels, [split + gap, 1], "x"),
        xaxis2=dict(anchor="y2", title=dict(text=xtitle or _("dimension i"))),
        yaxis2=y_axis(bottom_labels, [0, split], "x2"),
        annotations=[
            dict(text=t, x=0.5, y=y, xref="paper", yref="paper", xanchor="center", yanchor="bottom", showarrow=False)
            for t, y in ((titles[0], 1.0), (titles[1], split))
        ],
    )
    return go.Figure(
        [_vector_heatmap(top, top_labels, zmax, True), _vector_heatmap(bottom, bottom_labels, zmax, False, "2")], layout
    )


def query_keys(
    query: np.ndarray, keys: np.ndarray, query_token: str, key_tokens: Sequence[str], title: str = "", start: int = 0
) -> go.Figure:
    """The query vector q (d_k,) above every key vector k_j (Tk, d_k): rows are vectors, columns dimensions.
    start: the first key's position (the keys of a window of a longer input)."""
    if query.ndim != 1 or keys.ndim != 2 or keys.shape[1] != query.shape[0]:
        raise ValueError(f"query (d_k,) and keys (Tk, d_k) expected, got {query.shape} and {keys.shape}")
    _check_tokens(keys.shape[0], key_tokens, "key vectors")
    return _rows_figure(
        query[None, :],
        [f"q: {display_token(query_token)}"],
        keys,
        indexed(key_tokens, start),
        (_("query q"), _("keys k_j")),
        title or _("Query and key vectors"),
    )


def values_and_output(
    values: np.ndarray,
    weights: np.ndarray,
    output: np.ndarray,
    key_tokens: Sequence[str],
    title: str = "",
    start: int = 0,
) -> go.Figure:
    """Every value vector v_j (Tk, d_k), labelled with its weight, above the weighted sum sum_j a_j v_j (d_k,);
    start: the first key's position (a window's keys: the output still sums over every key)."""
    if values.ndim != 2 or weights.shape != (values.shape[0],) or output.shape != (values.shape[1],):
        raise ValueError(
            f"values (Tk, d_k), weights (Tk,), output (d_k,) expected; got {values.shape}, "
            f"{weights.shape}, {output.shape}"
        )
    _check_tokens(values.shape[0], key_tokens, "value vectors")
    labels = [f"{label} · a={w:.2f}" for label, w in zip(indexed(key_tokens, start), weights)]
    return _rows_figure(
        values,
        labels,
        output[None, :],
        ["Σ a_j v_j"],
        (_("values v_j (with their weights a_j)"), _("this head's output")),
        title or _("Values and their weighted sum"),
    )


def _key_axis(key_tokens: Sequence[str], start: int = 0) -> dict:
    n = len(key_tokens)
    return dict(
        tickmode="array",
        tickvals=list(range(start, start + n)),
        ticktext=indexed(key_tokens, start),
        tickangle=-45 if n > 10 else 0,
        title=dict(text=_("key")),
    )


_LEGEND = dict(orientation="h", y=1.02, yanchor="bottom")


def _bars_per_key(traces: list, title: str, key_tokens: Sequence[str], start: int, yaxis: dict) -> go.Figure:
    """Bar traces grouped over the keys (one group per key, a legend above): the scores' and the weights' figure."""
    return go.Figure(
        traces,
        _layout(
            title,
            340,
            barmode="group",
            showlegend=True,
            legend=_LEGEND,
            xaxis=_key_axis(key_tokens, start),
            yaxis=yaxis,
        ),
    )


def scores(
    raw: np.ndarray,
    scaled: np.ndarray | None,
    allowed: np.ndarray,
    key_tokens: Sequence[str],
    title: str = "",
    start: int = 0,
    names: tuple[str, str] | None = None,
) -> go.Figure:
    """Raw scores q·k_j per key and, unless scaled is None, the scaled q·k_j/sqrt(d_k) beside them (names: the two
    series' legend names instead, e.g. scaled and soft-capped scores).

    Keys the mask hides are grey and marked −∞. start: the first key's position (a window's keys)."""
    first, second = names or (_("q·k_j (raw)"), _("q·k_j / √d_k (scaled)"))
    shown = [(first, raw, RAW_COLOR)] + ([] if scaled is None else [(second, scaled, SCALED_COLOR)])
    for name, values, _color in shown:
        if values.shape != (len(key_tokens),) or allowed.shape != values.shape:
            raise ValueError(
                f"{name}: {values.shape} scores and {allowed.shape} mask entries for {len(key_tokens)} key tokens"
            )
    x = np.arange(start, start + len(key_tokens))
    text = np.where(allowed, "", _("masked → −∞"))
    traces = [
        go.Bar(
            x=x,
            y=values,
            name=name,
            marker_color=np.where(allowed, color, MASKED_COLOR).tolist(),
            text=text if i == len(shown) - 1 else None,
            textposition="outside",
            hovertemplate=_("key %{x}<br>score %{y:.4f}") + "<extra></extra>",
        )
        for i, (name, values, color) in enumerate(shown)
    ]
    return _bars_per_key(traces, title or _("Scores"), key_tokens, start, dict(title=dict(text=_("score"))))


def mask_row(allowed: np.ndarray, key_tokens: Sequence[str], title: str = "", start: int = 0) -> go.Figure:
    """The mask added to one row of scores: 0 where the key may be seen, −∞ (grey) where it may not; start: the
    first key's position (a window's keys)."""
    _check_tokens(allowed.shape[0], key_tokens, "mask entries")
    z = np.where(allowed, 0.0, np.nan)[None, :]
    text = np.where(allowed, "0", "−∞")[None, :]
    trace = go.Heatmap(
        z=z,
        x=np.arange(start, start + z.shape[1]),
        y=[0],
        text=text,
        texttemplate="%{text}",
        textfont=dict(size=TICK_PX, color=TEXT_COLOR),  # on white cells: dark (plotly's own choice is grey)
        zmin=-1,
        zmax=1,
        colorscale=[[0, "#ffffff"], [1, "#ffffff"]],
        showscale=False,
        hoverongaps=False,
        hovertemplate=_("key %{x}: %{text}") + "<extra></extra>",
        xgap=2,
    )
    return go.Figure(
        trace,
        _layout(
            title or _("Mask"),
            190,
            top=50,
            plot_bgcolor=MASKED_COLOR,
            xaxis=_key_axis(key_tokens, start),
            yaxis=dict(showticklabels=False),
        ),
    )


def weights_row(
    weights: np.ndarray,
    key_tokens: Sequence[str],
    unscaled: np.ndarray | None = None,
    title: str = "",
    start: int = 0,
) -> go.Figure:
    """The softmax weights a_j of one query (Tk,); with `unscaled`, also softmax without 1/sqrt(d_k) beside them;
    start: the first key's position (a window's keys)."""
    _check_tokens(weights.shape[0], key_tokens, "weights")
    x = np.arange(start, start + len(key_tokens))
    traces = [
        go.Bar(
            x=x,
            y=weights,
            name="softmax(q·k_j / √d_k)",
            marker_color=SCALED_COLOR,
            hovertemplate=_("key %{x}<br>weight %{y:.4f}") + "<extra></extra>",
        )
    ]
    if unscaled is not None:
        if unscaled.shape != weights.shape:
            raise ValueError(f"unscaled weights {unscaled.shape} differ from weights {weights.shape}")
        traces.append(
            go.Bar(
                x=x,
                y=unscaled,
                name=_("without 1/√d_k"),
                marker_color=RAW_COLOR,
                hovertemplate=_("key %{x}<br>weight without the scale %{y:.4f}") + "<extra></extra>",
            )
        )
    yaxis = dict(title=dict(text=_("weight")), range=[0, 1.05])
    return _bars_per_key(traces, title or _("Attention weights"), key_tokens, start, yaxis)


def products(values: np.ndarray, key_label: str, title: str = "") -> go.Figure:
    """q_i * k_i per dimension i for one key (d_k,): red pushes the score up, blue down; they sum to q·k."""
    if values.ndim != 1:
        raise ValueError(f"products must be (d_k,), got {values.shape}")
    colors = np.where(values >= 0, "#d62728", "#1f77b4").tolist()
    trace = go.Bar(
        x=np.arange(values.shape[0]),
        y=values,
        marker_color=colors,
        hovertemplate=_("dimension %{x}") + "<br>q_i·k_i %{y:.4f}<extra></extra>",
    )
    return go.Figure(
        trace,
        _layout(
            title
            or _("q_i · k_i for key {key}: they sum to {total}").format(key=key_label, total=f"{values.sum():.3f}"),
            320,
            top=60,
            xaxis=dict(title=dict(text=_("dimension i"))),
            yaxis=dict(title=dict(text="q_i · k_i")),
        ),
    )


def concat_and_output(
    concat: np.ndarray, output: np.ndarray, n_heads: int, head: int | None = None, title: str = ""
) -> go.Figure:
    """The heads' outputs side by side (H * d_k,), head boundaries marked, above the projected output row (D,)
    (H * d_k is D except where the head width is set apart, as T5's d_kv)."""
    if concat.ndim != 1 or output.ndim != 1 or concat.shape[0] % n_heads:
        raise ValueError(
            f"concat (H * d_k,) with H = {n_heads} and output (D,) expected; got {concat.shape}, {output.shape}"
        )
    dk = concat.shape[0] // n_heads
    edge = lambda x: dict(  # noqa: E731
        type="line", x0=x, x1=x, xref="x", y0=0, y1=1, yref="y domain", line=dict(width=1, color="#333333")
    )
    shapes = [edge(h * dk - 0.5) for h in range(1, n_heads)]
    if head is not None:
        shapes.append(
            dict(
                type="rect",
                x0=head * dk - 0.5,
                x1=(head + 1) * dk - 0.5,
                xref="x",
                y0=0,
                y1=1,
                yref="y domain",
                line=dict(width=2, color="#2ca02c"),
            )
        )
    fig = _rows_figure(
        concat[None, :],
        ["Concat(head_1..head_h)"],
        output[None, :],
        ["· W^O + b^O"],
        (_("heads side by side"), _("the layer's attention output")),
        title or _("Concatenation and W^O"),
        shapes,
        xtitle=_("dimension (head h holds dimensions h·d_k … (h+1)·d_k − 1)"),
    )
    fig.layout.height = 300
    return fig


def matrix(w: np.ndarray, title: str = "") -> go.Figure:
    """A weight matrix (out, in) as a heatmap, as nn.Linear stores it."""
    if w.ndim != 2:
        raise ValueError(f"a matrix must have 2 axes, got {w.shape}")
    zmax = _zmax(w)
    trace = go.Heatmap(
        z=w,
        zmin=-zmax,
        zmax=zmax,
        zmid=0,
        colorscale=DIVERGING,
        hovertemplate=_("out %{y}, in %{x}") + "<br>%{z:.4f}<extra></extra>",
    )
    return go.Figure(
        trace,
        _layout(
            title or "W^O",
            420,
            top=50,
            xaxis=dict(title=dict(text=_("input dimension (concatenated heads)"))),
            yaxis=dict(title=dict(text=_("output dimension")), autorange="reversed"),
        ),
    )


def format_bytes(n: int) -> str:
    """1536 -> '1.5 KiB'."""
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return _("{n} bytes").format(n=int(value)) if unit == "bytes" else f"{value:,.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_count(n: int) -> str:
    """12_884_901_888 -> '12.9 G' (powers of 1000)."""
    value = float(n)
    for unit in ("", " k", " M", " G", " T", " P", " E"):
        if abs(value) < 1000 or unit == " E":
            return f"{int(value)}" if unit == "" else f"{value:,.1f}{unit}"
        value /= 1000
    raise AssertionError("unreachable")


def shape_rows(steps: Sequence) -> list[dict[str, str]]:
    """Rows for a table from model.analysis.inspect.ShapeStep-like objects (what, formula, shape); headers and steps translated."""
    return [
        {_("step"): _(s.what), _("formula"): _(s.formula), _("shape"): " × ".join(map(str, s.shape))} for s in steps
    ]


def length_cost(lengths: Sequence[int], weight_bytes: Sequence[int], current: int, title: str = "") -> go.Figure:
    """Memory of the attention weights against sequence length (log-log): a line of slope 2, the current length marked."""
    if len(lengths) != len(weight_bytes) or not lengths:
        raise ValueError(f"{len(lengths)} lengths but {len(weight_bytes)} memory values")
    text = [format_bytes(b) for b in weight_bytes]
    trace = go.Scatter(
        x=list(lengths),
        y=list(weight_bytes),
        mode="lines+markers+text",
        text=text,
        textposition="top left",  # above the line, which rises to the right: the line never crosses a label
        textfont=dict(size=TICK_PX, color=TEXT_COLOR),
        hovertemplate=_("length %{x}") + "<br>%{text}<extra></extra>",
        cliponaxis=False,
        marker=dict(size=[14 if t == current else 8 for t in lengths]),
    )
    # Ticks in the labels' own units (KiB, MiB, GiB: powers of 4, one per step of the line when the length doubles),
    # and the lengths themselves on x; plotly's own log ticks (1, 2, 5 per decade, in SI "G"/"M") crowded and named
    # other units than the labels.
    low, high = max(1, min(weight_bytes)), max(1, max(weight_bytes))
    bottom, top = math.log10(low) - 0.4, math.log10(high) + 0.6  # room for the labels above the points
    powers = [4**p for p in range(40) if bottom <= math.log10(4**p) <= top]
    return go.Figure(
        trace,
        _layout(
            title or _("Memory grows with T²"),
            360,
            top=60,
            xaxis=dict(
                type="log",
                tickmode="array",
                tickvals=list(lengths),
                ticktext=[str(t) for t in lengths],
                title=dict(text=_("sequence length T (2× the length: 4× the memory)")),
            ),
            yaxis=dict(
                type="log",
                tickmode="array",
                tickvals=powers,
                ticktext=[format_bytes(p).replace(".0 ", " ") for p in powers],
                range=[bottom, top],
                title=dict(text=_("attention weights, bytes")),
            ),
        ),
    )
