"""Figures for the computation inside one attention head: numpy in, plotly out.

Vectors are drawn as heatmaps with a dimension axis (diverging colours, zero white); per-key
quantities as bars over the key tokens, labelled "index: token" so repeated tokens stay apart.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .tokens import display_token, indexed

DIVERGING = "RdBu_r"
MASKED_COLOR = "#bdbdbd"
SCALED_COLOR, RAW_COLOR = "#1f77b4", "#ff7f0e"


def _check_tokens(n: int, tokens: Sequence[str], what: str) -> None:
    if n != len(tokens):
        raise ValueError(f"{n} {what} but {len(tokens)} key tokens")


def _vector_heatmap(z: np.ndarray, labels: Sequence[str], zmax: float, showscale: bool) -> go.Heatmap:
    return go.Heatmap(z=z, x=np.arange(z.shape[1]), y=np.arange(z.shape[0]), zmin=-zmax, zmax=zmax, zmid=0,
                      colorscale=DIVERGING, showscale=showscale, customdata=np.repeat(np.array(labels, dtype=object)[:, None], z.shape[1], 1),
                      hovertemplate="%{customdata}<br>dimension %{x}<br>value %{z:.4f}<extra></extra>",
                      colorbar=dict(thickness=12, len=0.8) if showscale else None)


def _zmax(*arrays: np.ndarray) -> float:
    m = max(float(np.abs(a).max()) if a.size else 0.0 for a in arrays)
    return m if m > 0 else 1.0


def _rows_figure(top: np.ndarray, top_labels: Sequence[str], bottom: np.ndarray, bottom_labels: Sequence[str],
                 titles: tuple[str, str], title: str) -> go.Figure:
    """Two stacked vector heatmaps sharing the dimension axis and one colour scale."""
    n_top, n_bottom = top.shape[0], bottom.shape[0]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, subplot_titles=titles,
                        row_heights=[max(n_top, 1), max(n_bottom, 1)])
    zmax = _zmax(top, bottom)
    fig.add_trace(_vector_heatmap(top, top_labels, zmax, True), row=1, col=1)
    fig.add_trace(_vector_heatmap(bottom, bottom_labels, zmax, False), row=2, col=1)
    for row, labels in ((1, top_labels), (2, bottom_labels)):
        fig.update_yaxes(tickmode="array", tickvals=list(range(len(labels))), ticktext=list(labels), autorange="reversed",
                         row=row, col=1)
    fig.update_xaxes(title_text="dimension i", row=2, col=1)
    fig.update_layout(title=title, height=int(min(900, 170 + 26 * (n_top + n_bottom))), margin=dict(l=10, r=10, t=70, b=10))
    return fig


def query_keys(query: np.ndarray, keys: np.ndarray, query_token: str, key_tokens: Sequence[str], title: str = "") -> go.Figure:
    """The query vector q (d_k,) above every key vector k_j (Tk, d_k): rows are vectors, columns dimensions."""
    if query.ndim != 1 or keys.ndim != 2 or keys.shape[1] != query.shape[0]:
        raise ValueError(f"query (d_k,) and keys (Tk, d_k) expected, got {query.shape} and {keys.shape}")
    _check_tokens(keys.shape[0], key_tokens, "key vectors")
    return _rows_figure(query[None, :], [f"q: {display_token(query_token)}"], keys, indexed(key_tokens),
                        ("query q", "keys k_j"), title or "Query and key vectors")


def values_and_output(values: np.ndarray, weights: np.ndarray, output: np.ndarray, key_tokens: Sequence[str],
                      title: str = "") -> go.Figure:
    """Every value vector v_j (Tk, d_k), labelled with its weight, above the weighted sum sum_j a_j v_j (d_k,)."""
    if values.ndim != 2 or weights.shape != (values.shape[0],) or output.shape != (values.shape[1],):
        raise ValueError(f"values (Tk, d_k), weights (Tk,), output (d_k,) expected; got {values.shape}, "
                         f"{weights.shape}, {output.shape}")
    _check_tokens(values.shape[0], key_tokens, "value vectors")
    labels = [f"{label} · a={w:.2f}" for label, w in zip(indexed(key_tokens), weights)]
    return _rows_figure(values, labels, output[None, :], ["Σ a_j v_j"], ("values v_j (with their weights a_j)",
                        "this head's output"), title or "Values and their weighted sum")


def _key_axis(fig: go.Figure, key_tokens: Sequence[str]) -> None:
    n = len(key_tokens)
    fig.update_xaxes(tickmode="array", tickvals=list(range(n)), ticktext=indexed(key_tokens), tickangle=-45 if n > 10 else 0,
                     title_text="key")


def scores(raw: np.ndarray, scaled: np.ndarray | None, allowed: np.ndarray, key_tokens: Sequence[str],
           title: str = "") -> go.Figure:
    """Raw scores q·k_j per key and, unless scaled is None, the scaled q·k_j/sqrt(d_k) beside them.

    Keys the mask hides are grey and marked −∞."""
    shown = [("q·k_j (raw)", raw, RAW_COLOR)] + ([] if scaled is None else [("q·k_j / √d_k (scaled)", scaled, SCALED_COLOR)])
    for name, values, _ in shown:
        if values.shape != (len(key_tokens),) or allowed.shape != values.shape:
            raise ValueError(f"{name}: {values.shape} scores and {allowed.shape} mask entries for {len(key_tokens)} key tokens")
    x = np.arange(len(key_tokens))
    text = np.where(allowed, "", "masked → −∞")
    fig = go.Figure([go.Bar(x=x, y=values, name=name, marker_color=np.where(allowed, color, MASKED_COLOR).tolist(),
                            text=text if i == len(shown) - 1 else None, textposition="outside",
                            hovertemplate="key %{x}<br>score %{y:.4f}<extra></extra>")
                     for i, (name, values, color) in enumerate(shown)])
    _key_axis(fig, key_tokens)
    fig.update_yaxes(title_text="score")
    fig.update_layout(title=title or "Scores", barmode="group", height=340, showlegend=True,
                      legend=dict(orientation="h", y=1.02, yanchor="bottom"), margin=dict(l=10, r=10, t=70, b=10))
    return fig


def mask_row(allowed: np.ndarray, key_tokens: Sequence[str], title: str = "") -> go.Figure:
    """The mask added to one row of scores: 0 where the key may be seen, −∞ (grey) where it may not."""
    _check_tokens(allowed.shape[0], key_tokens, "mask entries")
    z = np.where(allowed, 0.0, np.nan)[None, :]
    text = np.where(allowed, "0", "−∞")[None, :]
    fig = go.Figure(go.Heatmap(z=z, x=np.arange(z.shape[1]), y=[0], text=text, texttemplate="%{text}", zmin=-1, zmax=1,
                               colorscale=[[0, "#ffffff"], [1, "#ffffff"]], showscale=False, hoverongaps=False,
                               hovertemplate="key %{x}: %{text}<extra></extra>", xgap=2))
    _key_axis(fig, key_tokens)
    fig.update_yaxes(showticklabels=False)
    fig.update_layout(title=title or "Mask", height=170, plot_bgcolor=MASKED_COLOR, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def weights_row(weights: np.ndarray, key_tokens: Sequence[str], unscaled: np.ndarray | None = None, title: str = "") -> go.Figure:
    """The softmax weights a_j of one query (Tk,); with `unscaled`, also softmax without 1/sqrt(d_k) beside them."""
    _check_tokens(weights.shape[0], key_tokens, "weights")
    x = np.arange(len(key_tokens))
    traces = [go.Bar(x=x, y=weights, name="softmax(q·k_j / √d_k)", marker_color=SCALED_COLOR,
                     hovertemplate="key %{x}<br>weight %{y:.4f}<extra></extra>")]
    if unscaled is not None:
        if unscaled.shape != weights.shape:
            raise ValueError(f"unscaled weights {unscaled.shape} differ from weights {weights.shape}")
        traces.append(go.Bar(x=x, y=unscaled, name="without 1/√d_k", marker_color=RAW_COLOR,
                             hovertemplate="key %{x}<br>weight without the scale %{y:.4f}<extra></extra>"))
    fig = go.Figure(traces)
    _key_axis(fig, key_tokens)
    fig.update_yaxes(title_text="weight", range=[0, 1.05])
    fig.update_layout(title=title or "Attention weights", barmode="group", height=340, showlegend=True,
                      legend=dict(orientation="h", y=1.02, yanchor="bottom"), margin=dict(l=10, r=10, t=70, b=10))
    return fig


def products(values: np.ndarray, key_label: str, title: str = "") -> go.Figure:
    """q_i * k_i per dimension i for one key (d_k,): red pushes the score up, blue down; they sum to q·k."""
    if values.ndim != 1:
        raise ValueError(f"products must be (d_k,), got {values.shape}")
    colors = np.where(values >= 0, "#d62728", "#1f77b4").tolist()
    fig = go.Figure(go.Bar(x=np.arange(values.shape[0]), y=values, marker_color=colors,
                           hovertemplate="dimension %{x}<br>q_i·k_i %{y:.4f}<extra></extra>"))
    fig.update_xaxes(title_text="dimension i")
    fig.update_yaxes(title_text="q_i · k_i")
    fig.update_layout(title=title or f"q_i · k_i for key {key_label}: they sum to {values.sum():.3f}", height=320,
                      margin=dict(l=10, r=10, t=60, b=10))
    return fig


def concat_and_output(concat: np.ndarray, output: np.ndarray, n_heads: int, head: int | None = None, title: str = "") -> go.Figure:
    """The heads' outputs side by side (D,), head boundaries marked, above the projected output row (D,)."""
    if concat.ndim != 1 or output.shape != concat.shape or concat.shape[0] % n_heads:
        raise ValueError(f"concat and output must be (D,) with D divisible by {n_heads}; got {concat.shape}, {output.shape}")
    fig = _rows_figure(concat[None, :], ["Concat(head_1..head_h)"], output[None, :], ["· W^O + b^O"],
                       ("heads side by side", "the layer's attention output"), title or "Concatenation and W^O")
    dk = concat.shape[0] // n_heads
    for h in range(1, n_heads):
        fig.add_vline(x=h * dk - 0.5, line_width=1, line_color="#333333", row=1, col=1)
    if head is not None:
        fig.add_vrect(x0=head * dk - 0.5, x1=(head + 1) * dk - 0.5, line_width=2, line_color="#2ca02c", row=1, col=1)
    fig.update_xaxes(title_text="dimension (head h holds dimensions h·d_k … (h+1)·d_k − 1)", row=2, col=1)
    fig.update_layout(height=300)
    return fig


def matrix(w: np.ndarray, title: str = "") -> go.Figure:
    """A weight matrix (out, in) as a heatmap, as nn.Linear stores it."""
    if w.ndim != 2:
        raise ValueError(f"a matrix must have 2 axes, got {w.shape}")
    zmax = _zmax(w)
    fig = go.Figure(go.Heatmap(z=w, zmin=-zmax, zmax=zmax, zmid=0, colorscale=DIVERGING,
                               hovertemplate="out %{y}, in %{x}<br>%{z:.4f}<extra></extra>"))
    fig.update_xaxes(title_text="input dimension (concatenated heads)")
    fig.update_yaxes(title_text="output dimension", autorange="reversed")
    fig.update_layout(title=title or "W^O", height=420, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def format_bytes(n: int) -> str:
    """1536 -> '1.5 KiB'."""
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{int(value)} bytes" if unit == "bytes" else f"{value:,.1f} {unit}"
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
    """Rows for a table from model.inspect.ShapeStep-like objects (what, formula, shape)."""
    return [{"step": s.what, "formula": s.formula, "shape": " × ".join(map(str, s.shape))} for s in steps]


def length_cost(lengths: Sequence[int], weight_bytes: Sequence[int], current: int, title: str = "") -> go.Figure:
    """Memory of the attention weights against sequence length (log-log): a line of slope 2, the current length marked."""
    if len(lengths) != len(weight_bytes) or not lengths:
        raise ValueError(f"{len(lengths)} lengths but {len(weight_bytes)} memory values")
    text = [format_bytes(b) for b in weight_bytes]
    fig = go.Figure(go.Scatter(x=list(lengths), y=list(weight_bytes), mode="lines+markers+text", text=text,
                               textposition="top left", hovertemplate="length %{x}<br>%{text}<extra></extra>",
                               marker=dict(size=[14 if t == current else 8 for t in lengths])))
    fig.update_xaxes(type="log", title_text="sequence length T")
    fig.update_yaxes(type="log", title_text="attention weights, bytes (float32)")
    fig.update_layout(title=title or "Attention weights grow with T²: twice the length, four times the memory", height=360,
                      margin=dict(l=10, r=10, t=60, b=10))
    return fig
