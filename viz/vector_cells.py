"""Heatmap cells as vector shapes, for a figure written to SVG or PDF.

Plotly draws a heatmap trace as one raster image (an <image> inside the SVG): a figure for a paper blurs when it is
scaled. `vector_heatmaps` returns a copy of a figure whose heatmaps are drawn as filled paths instead: per trace one
rectangle of its commonest colour under the whole map, then one path shape per other colour level (each cell a
rectangle, runs of equal cells along a row merged into one) and one for its NaN cells, on the trace's own axes, below
the other traces (gold markers, masks and gap lines stay on top). Each heatmap is replaced by
an invisible scatter that keeps its axes' categories and its colour bar. Colours come from the trace's colour scale
(or its colour axis) quantised to `levels` steps; NaN cells get the plot's background colour, as on screen.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

LEVELS = 64  # colour steps: next to a continuous scale at print sizes, few enough that equal cells merge into runs


def cell_edges(coords, n: int) -> np.ndarray:
    """The n + 1 edges of n cells along one axis, in the axis's own units: category serial numbers (labels, or
    no coordinates) are i - 0.5 .. i + 0.5; numeric centres get edges halfway between neighbours."""
    if coords is None or len(coords) == 0 or isinstance(coords[0], str):
        return np.arange(n + 1, dtype=float) - 0.5
    c = np.asarray(coords, dtype=float)[:n]
    if n == 1:
        return np.array([c[0] - 0.5, c[0] + 0.5])
    mid = (c[1:] + c[:-1]) / 2
    return np.concatenate([[c[0] - (mid[0] - c[0])], mid, [c[-1] + (c[-1] - mid[-1])]])


def quantise(z: np.ndarray, low: float, high: float, levels: int = LEVELS) -> np.ndarray:
    """(rows, cols) integer colour levels 0..levels-1 of z on [low, high] (clipped); NaN cells -1."""
    z = np.asarray(z, dtype=np.float64)
    span = high - low if high > low else 1.0
    q = np.rint(np.clip((z - low) / span, 0.0, 1.0) * (levels - 1))
    return np.where(np.isfinite(z), q, -1).astype(np.int64)


def runs_path(q: np.ndarray, level: int, x_edges: np.ndarray, y_edges: np.ndarray) -> str:
    """An SVG path (absolute M/H/V/Z, in axis units) of every cell of `level`, runs along a row merged."""
    parts = []
    for r, row in enumerate(q):
        hit = np.flatnonzero(row == level)
        if not hit.size:
            continue
        breaks = np.flatnonzero(np.diff(hit) > 1)
        starts = np.concatenate([[hit[0]], hit[breaks + 1]])
        ends = np.concatenate([hit[breaks], [hit[-1]]])
        y0, y1 = _num(y_edges[r]), _num(y_edges[r + 1])
        for s, e in zip(starts, ends):
            x0, x1 = _num(x_edges[s]), _num(x_edges[e + 1])
            parts.append(f"M{x0},{y0}H{x1}V{y1}H{x0}Z")
    return "".join(parts)


def _num(v: float) -> str:
    return f"{v:.6g}"


def _scale_of(trace, layout) -> tuple[list, float | None, float | None, dict | None, str | None, bool]:
    """(colour scale, low, high, own colour bar, colour axis name, reversed) of a heatmap trace: its colour axis's
    (layout.coloraxis...) or its own."""
    name = trace.coloraxis
    if name:
        axis = layout[name]
        return axis.colorscale, axis.cmin, axis.cmax, None, name, bool(axis.reversescale)
    bar = trace.colorbar.to_plotly_json()
    return trace.colorscale, trace.zmin, trace.zmax, bar, None, bool(trace.reversescale)


def _resolved(scale) -> list:
    """A colour scale as [[position, colour], ...] (a named scale resolved as plotly resolves it)."""
    return [list(step) for step in go.Heatmap(colorscale=scale or "Plasma").colorscale]


def vector_heatmaps(fig: go.Figure, levels: int = LEVELS) -> go.Figure:
    """A copy of fig with every heatmap trace drawn as path shapes (see the module docstring); other traces,
    shapes, annotations and the layout unchanged. A figure without heatmaps comes back as an equal copy."""
    traces, shapes = [], []
    for trace in fig.data:
        z = None if trace.type != "heatmap" or trace.z is None else np.asarray(trace.z, dtype=np.float64)
        if z is None or z.ndim != 2 or not z.size:
            traces.append(trace)
            continue
        scale, low, high, bar, axis_name, flip = _scale_of(trace, fig.layout)
        finite = z[np.isfinite(z)]
        low = float(low) if low is not None else float(finite.min()) if finite.size else 0.0
        high = float(high) if high is not None else float(finite.max()) if finite.size else 1.0
        colorscale = _resolved(scale)
        if flip:
            colorscale = [[1 - p, c] for p, c in reversed(colorscale)]
        q = quantise(z, low, high, levels)
        x_edges, y_edges = cell_edges(trace.x, z.shape[1]), cell_edges(trace.y, z.shape[0])
        colours = sample_colorscale(colorscale, list(np.linspace(0, 1, levels)))
        cell = dict(type="path", xref=trace.xaxis or "x", yref=trace.yaxis or "y", line=dict(width=0), layer="below")
        seen = q[q >= 0]
        if seen.size:  # the commonest colour as one rectangle under the map; the other cells drawn over it
            common = int(np.bincount(seen).argmax())
            x0, x1, y0, y1 = (_num(v) for v in (x_edges[0], x_edges[-1], y_edges[0], y_edges[-1]))
            shapes.append(dict(cell, path=f"M{x0},{y0}H{x1}V{y1}H{x0}Z", fillcolor=colours[common]))
            if (q < 0).any():  # NaN cells (masked): the plot's background again, as on screen
                shapes.append(dict(cell, path=runs_path(q, -1, x_edges, y_edges), fillcolor=_background(fig)))
            for level in np.unique(seen):
                if level != common:
                    shapes.append(dict(cell, path=runs_path(q, int(level), x_edges, y_edges), fillcolor=colours[level]))
        traces.append(_stand_in(trace, z.shape, low, high, colorscale, bar, axis_name))
    out = go.Figure(data=traces, layout=fig.layout)
    if shapes:
        out.layout.shapes = [*shapes, *fig.layout.shapes]
    return out


def _background(fig: go.Figure) -> str:
    """The plot area's colour: the figure's plot_bgcolor, else its template's, else white."""
    return fig.layout.plot_bgcolor or fig.layout.template.layout.plot_bgcolor or "white"


def _stand_in(trace, shape, low: float, high: float, colorscale, bar, axis_name) -> go.Scatter:
    """An invisible scatter in the heatmap's place: its axes keep their categories (token labels) and the colour
    bar stays (through the colour axis, or its own scale with the heatmap's range)."""
    rows, cols = shape
    xs = list(trace.x) if trace.x is not None else list(range(cols))
    ys = list(trace.y) if trace.y is not None else list(range(rows))
    n = max(len(xs), len(ys))
    xs, ys = xs + [xs[0]] * (n - len(xs)), ys + [ys[0]] * (n - len(ys))
    marker: dict = dict(opacity=0, size=1, color=[low] * n)
    if axis_name:
        marker["coloraxis"] = axis_name
    else:
        marker.update(
            colorscale=colorscale,
            cmin=low,
            cmax=high,
            showscale=trace.showscale is not False,
            colorbar=bar or {},
        )
    return go.Scatter(
        mode="markers",
        x=xs,
        y=ys,
        xaxis=trace.xaxis or "x",
        yaxis=trace.yaxis or "y",
        marker=marker,
        hoverinfo="skip",
        showlegend=False,
        name=trace.name,
    )
