"""Attention over training, played: one heatmap whose frames are the training snapshots, step by step.

training_animation: the (Tq, Tk) map of every snapshot as the frames of one plotly figure, with plotly's own Play and
Pause buttons (layout.updatemenus) and a slider over the steps (layout.sliders), so that it plays in the browser with
no round-trip to the server. The first frame shown is the heatmap `attention_heatmap` draws for that snapshot; each
frame replaces only the heatmap's weights and the title (the gold marks and the axes stay).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import _

from .attention_figs import MAX_HEIGHT, MAX_WIDTH, TITLE_PX, _z, attention_heatmap, heatmap_geometry
from .tokens import TEXT_COLOR, TICK_PX, Rows, as_rows

FRAME_MS = 1200  # how long each snapshot stays on a projector: long enough to read its title, 8 steps in ten seconds
BUTTONS_ROWS = 2.0  # the Play and Pause buttons' row, in units of the text size
SLIDER_ROWS = 2.4  # the slider under them (its rail and the steps' labels), in units of the text size
CONTROLS_GAP_PX = 16  # between the x axis' title and the controls


def _frame_step(step: int) -> str:
    return str(step)


def training_animation(
    weights: Sequence[np.ndarray] | np.ndarray,
    steps: Sequence[int],
    query_tokens: Rows | Sequence[str],
    key_tokens: Sequence[str],
    titles: Sequence[str],
    start: int = 0,
    frame_ms: int = FRAME_MS,
    max_height: int = MAX_HEIGHT,
    max_width: int = MAX_WIDTH,
    tick_px: int = TICK_PX,
    **heatmap: object,
) -> go.Figure:
    """The attention map of each training snapshot as the frames of one figure, with Play/Pause and a step slider.

    weights: one (Tq, Tk) map per snapshot, in the order of `steps` (the same rows and columns for every snapshot);
    titles: the title of each snapshot's frame; start: the index of the snapshot shown first (the slider starts
    there, and Play goes on from it); frame_ms: how long each snapshot is shown while playing. The figure, controls
    included, is at most max_height (+ a legend row) tall. Other keyword arguments (gold, key_label, snug, ...) are
    `attention_heatmap`'s, for the first frame's figure whose layout every frame keeps.
    """
    maps = [np.asarray(w) for w in weights]
    if not (len(maps) == len(steps) == len(titles)) or not maps:
        raise ValueError(f"{len(maps)} maps, {len(steps)} steps and {len(titles)} titles: one of each per snapshot")
    if any(m.shape != maps[0].shape for m in maps):
        raise ValueError(f"every snapshot's map must have one shape, got {sorted({m.shape for m in maps})}")
    if not 0 <= start < len(maps):
        raise ValueError(f"start {start} is not one of the {len(maps)} snapshots")
    buttons = int(BUTTONS_ROWS * tick_px)
    controls = CONTROLS_GAP_PX + buttons + int(SLIDER_ROWS * tick_px)  # buttons, then the slider (never side by side:
    # the buttons are as wide as their text, the slider as wide as the plot, which is narrow for a short input)
    box = dict(max_height=max_height - controls, max_width=max_width, tick_px=tick_px)
    fig = attention_heatmap(maps[start], query_tokens, key_tokens, titles[start], **box, **heatmap)
    # below the plot: the x labels and the axis title (as attention_heatmap measured them), then the controls
    rows = as_rows(query_tokens).tokens
    geo = heatmap_geometry(rows, key_tokens, **box)
    axis_px = int(geo.height - len(rows) * geo.cell - TITLE_PX)
    title_font = fig.layout.title.font.to_plotly_json()
    fig.frames = [
        go.Frame(
            name=_frame_step(step),
            data=[go.Heatmap(z=_z(m, heatmap.get("mask")))],  # type: ignore[arg-type]
            traces=[0],  # the heatmap only: the gold marks stay
            layout=dict(title=dict(text=title, font=title_font)),
        )
        for m, step, title in zip(maps, steps, titles, strict=True)
    ]
    font = dict(size=tick_px, color=TEXT_COLOR)
    play = dict(
        frame=dict(duration=frame_ms, redraw=True), transition=dict(duration=0), fromcurrent=True, mode="immediate"
    )
    pause = dict(frame=dict(duration=0, redraw=False), transition=dict(duration=0), mode="immediate")
    fig.update_layout(
        height=fig.layout.height + controls,
        margin=dict(b=(fig.layout.margin.b or 0) + axis_px + controls),
        updatemenus=[
            dict(
                type="buttons",
                direction="left",
                showactive=False,
                x=0,
                xanchor="left",
                y=0,
                yanchor="top",
                pad=dict(t=axis_px + CONTROLS_GAP_PX, r=8),
                font=font,
                buttons=[
                    dict(label="▶ " + _("Play"), method="animate", args=[None, play]),
                    dict(label="❚❚ " + _("Pause"), method="animate", args=[[None], pause]),
                ],
            )
        ],
        sliders=[
            dict(
                active=start,
                x=0,
                len=1,
                xanchor="left",
                y=0,
                yanchor="top",
                pad=dict(t=axis_px + CONTROLS_GAP_PX + buttons, b=0, l=0, r=0),
                font=font,
                currentvalue=dict(visible=False),  # the frame's title names its step
                transition=dict(duration=0),
                steps=[
                    dict(
                        label=_frame_step(step),
                        method="animate",
                        args=[[_frame_step(step)], dict(pause, frame=dict(duration=0, redraw=True))],
                    )
                    for step in steps
                ],
            )
        ],
    )
    return fig
