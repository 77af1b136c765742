"""Figures for one step of greedy decoding: candidates, and where the new token looked."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import N_, _

from .attention_figs import COLORSCALE, attention_heatmap, token_labels
from .pooled_figs import pooled_heatmap
from .pooling import MAX_CELLS, pool
from .tokens import TICK_PX, Rows, display_token, label_px, readable_layout, token_ticks


def wrap_title(title: str, width_px: float, size: int) -> str:
    """The title on one line if it fits width_px at `size` px, else on two ("<br>" at the space nearest its middle)."""
    if label_px(title, size) <= width_px or " " not in title:
        return title
    spaces = [i for i, ch in enumerate(title) if ch == " "]
    cut = min(spaces, key=lambda i: abs(i - len(title) / 2))
    return title[:cut] + "<br>" + title[cut + 1 :]


def top_k_bars(
    tokens: Sequence[str], probs: np.ndarray, chosen: int | None = 0, title: str = "", tick_px: int = TICK_PX
) -> go.Figure:
    """Horizontal bars of the k most probable next tokens, most probable on top; the chosen one highlighted.

    tick_px: the size of the labels and the probabilities on the bars (larger in presentation mode)."""
    if len(tokens) != len(probs):
        raise ValueError(f"{len(tokens)} candidate tokens but {len(probs)} probabilities")
    labels = [f"{i + 1}. {display_token(t)}" for i, t in enumerate(tokens)]
    colors = ["#d62728" if i == chosen else "#1f77b4" for i in range(len(tokens))]
    bars = go.Bar(
        x=probs,
        y=labels,
        orientation="h",
        marker_color=colors,
        # the chosen bar outlined: a candidate of 0.1% (a forced choice) is a sliver of a pixel without it
        marker_line=dict(color=colors, width=[4 if i == chosen else 0 for i in range(len(tokens))]),
        text=[f"{p:.1%}" for p in probs],
        # beside the bar, dark, at the tick size: inside a bar plotly shrinks the text to the bar (11 px white on
        # red at a projector's size); the axis runs past 1 to leave room for "100.0%"
        textposition="outside",
        cliponaxis=False,
        textfont=dict(color="#222222", size=tick_px),
        hovertemplate="%{y}<br>p = %{x:.4f}<extra></extra>",
    )
    layout = dict(
        xaxis=dict(title=dict(text=_("probability")), range=[0, 1.2], tickvals=[0, 0.2, 0.4, 0.6, 0.8, 1]),
        # Categories whatever the tokens look like: digit tokens ("2", "4") would otherwise make a numeric axis.
        yaxis=dict(type="category", autorange="reversed", tickfont=dict(size=tick_px)),
        title=dict(text=title or _("Next-token candidates")),
        height=80 + 36 * len(tokens),  # 36 px a bar: room for labels up to 24 px
        margin=dict(t=50, l=10, r=10, b=10),
    )
    return go.Figure(data=[bars], layout=readable_layout(layout, tick_px))  # built once: see attention_heatmap


MAX_ROWS_PX = 560  # rows beyond this height are thinned rather than make the chart taller than a screen


def step_rows(
    rows: np.ndarray, key_tokens: Sequence[str], title: str, width_px: int = 560, tick_px: int = TICK_PX
) -> go.Figure:
    """(L, H, Tk) attention rows of the newest position: one line per layer x head, keys across.

    width_px: about how wide the plot is drawn, so that key labels are thinned rather than crowded.
    tick_px: the size of the labels (larger in presentation mode).
    """
    if rows.ndim != 3 or rows.shape[-1] != len(key_tokens):
        raise ValueError(f"rows must be (layers, heads, {len(key_tokens)}), got shape {rows.shape}")
    L, H, Tk = rows.shape
    names = [f"L{layer} H{h}" for layer in range(L) for h in range(H)]
    z = np.asarray(rows, dtype=np.float32).reshape(L * H, Tk)  # (L*H, Tk): row layer*H + head
    rows_map = go.Heatmap(  # categorical axes: hover reads the row name and the "i: token" label from them
        z=z,
        x=token_labels(key_tokens),
        y=names,
        coloraxis="coloraxis",
        hovertemplate="%{y}<br>" + _("key %{x}<br>weight %{z:.3f}") + "<extra></extra>",
    )
    label_px = max(20, tick_px + 6)  # a row label's height (presentation: 18 px text, 24 px)
    # Every row labelled (plotly's own ticks labelled every other head): rows as tall as a label, or, for a model of
    # very many heads, shorter rows and every n-th labelled, so that the chart stays within a screen.
    row_px = min(label_px, max(6.0, MAX_ROWS_PX / (L * H)))
    every = int(np.ceil(label_px / row_px - 1e-9))
    # The figure is about the plot plus row labels and colour bar wide; a longer title takes two lines.
    shown = wrap_title(title, width_px + 150, tick_px + 3)
    top = 50 + (tick_px + 9) * shown.count("<br>")
    layout = dict(
        xaxis=dict(type="category", **token_ticks(key_tokens, width_px / max(Tk, 1), size=tick_px).axis()),
        yaxis=dict(
            type="category", autorange="reversed", tickmode="array", tickvals=names[::every], ticktext=names[::every]
        ),
        coloraxis=dict(
            colorscale=COLORSCALE, cmin=0, cmax=1, colorbar=dict(title=dict(text=_("weight")), thickness=14)
        ),
        title=dict(text=shown),
        meta=dict(token_axis_px=width_px),  # the key axis's planned width: a typed input's ticks in the pack use it too
        height=int(max(200, row_px * L * H + 50 + top)),
        margin=dict(t=top, l=10, r=10, b=10),
    )
    return go.Figure(data=[rows_map], layout=readable_layout(layout, tick_px))  # built once: see attention_heatmap


def alignment_heatmap(weights: np.ndarray, rows: Rows, source_tokens: Sequence[str], title: str,
                      gold: Sequence[tuple[int, int]] | None = None, **size) -> go.Figure:  # fmt: skip
    """Every output row against the source, (T, S): each weight (gold: a demo's gold alignment drawn over it); when
    a side is longer than pooling.MAX_CELLS, the map pooled into blocks (their largest weight, the title says so;
    the hover gives both poolings), so that a long decoding sends at most about MAX_CELLS x MAX_CELLS cells.
    size: max_height, max_width, tick_px."""
    if max(weights.shape) <= MAX_CELLS:
        return attention_heatmap(weights, rows, source_tokens, title, key_label=N_("source"), gold=gold, snug=True,
                                 **size)  # fmt: skip
    return pooled_heatmap(pool(weights), "max", rows.tokens, source_tokens, title, N_("output"), N_("source"), **size)
