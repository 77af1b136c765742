"""The app's views as figures from the records alone, for the `figure` command and the notebook: one head, all heads
of a layer, every layer x head, the positional-encoding rows, the greedy steps' alignment.

Each view is the figure builder its page uses (attention_figs, overview_figs, positional_figs), given the same
arguments a page gives it: nothing is computed here but which map of the record to draw. `capture` is a
model.Capture and `trace` a model.Trace (read by their fields: viz/ never imports the model).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import N_, _

from . import attention_figs as figs
from .overview_figs import layer_head_overview
from .positional_figs import pe_matrix
from .tokens import capture_rows, output_rows

VIEWS = {  # name -> what it shows (marked only: translate where shown)
    "one": N_("One head (or the average of the heads) of one layer"),
    "grid": N_("All heads of one layer"),
    "overview": N_("Every layer × head"),
    "pe": N_("The positional encodings of the input's positions"),
    "decoding": N_("The greedy steps: each written token's attention over the source (or the text before it)"),
}
SIDES = {  # kind -> (the rows' side, the keys' side), as the attention page names them
    "encoder_self": (N_("source"), N_("source")),
    "decoder_self": (N_("decoder input"), N_("decoder input")),
    "cross": (N_("decoder input"), N_("source")),
}


class ViewError(ValueError):
    """A view the record cannot give (an unknown view or kind, a layer or head out of range); the message names it."""


def kinds_present(capture) -> list[str]:
    """The attention kinds this capture has (a decoder-only model: decoder_self alone), cross first: the order in
    which a view picks its default."""
    return [k for k in ("cross", "decoder_self", "encoder_self") if getattr(capture, k).shape[0]]


def kind_maps(capture, kind: str | None) -> tuple[str, np.ndarray, object, list[str], np.ndarray | None]:
    """(kind, its (L, H, Tq, Tk) weights, its rows, its key tokens, the causal mask or None); kind None: the first
    present (cross, then decoder self, then encoder self)."""
    present = kinds_present(capture)
    kind = kind or (present[0] if present else None)
    if kind not in present:
        raise ViewError(f"no attention of kind {kind!r} in this model: one of {', '.join(present) or 'none'}")
    weights = getattr(capture, kind)
    keys = capture.source_tokens if kind in ("encoder_self", "cross") else capture.target_tokens
    rows = capture_rows(capture, kind)
    mask = figs.causal_mask(len(rows), len(keys)) if kind == "decoder_self" else None
    return kind, weights, rows, list(keys), mask


def _layer(weights: np.ndarray, layer: int | None) -> int:
    n = weights.shape[0]
    layer = n - 1 if layer is None else layer
    if not 0 <= layer < n:
        raise ViewError(f"layer {layer} out of range: the model has layers 0..{n - 1}")
    return layer


def _head(weights: np.ndarray, head: int | str | None) -> int | str:
    n = weights.shape[1]
    if head is None or head == "average":
        return "average"
    if not 0 <= int(head) < n:
        raise ViewError(f"head {head} out of range: the model has heads 0..{n - 1}")
    return int(head)


def view_figure(
    view: str,
    capture,
    trace=None,
    kind: str | None = None,
    layer: int | None = None,
    head: int | str | None = None,
    box: tuple[int, int] = (figs.MAX_HEIGHT, figs.MAX_WIDTH),
    tick_px: int | None = None,
) -> go.Figure:
    """The figure of one view (VIEWS) of a capture (and, for "decoding", a trace), as the app draws it.

    kind: encoder_self, decoder_self or cross (default: the first present); layer: default the last; head: a number
    or "average" (default). box: (max height, max width) in px of the plot, as a page's chart_box."""
    tick_px = tick_px or figs.TICK_PX
    max_height, max_width = box
    if view not in VIEWS:
        raise ViewError(f"unknown view {view!r}: one of {', '.join(VIEWS)}")
    if view == "pe":
        rows = capture.source_pe if len(capture.source_tokens) else capture.target_pe
        return pe_matrix(np.asarray(rows), max_height=max_height)
    if view == "decoding":
        return _decoding(trace, layer, head, max_height, max_width, tick_px)
    kind, weights, rows, keys, mask = kind_maps(capture, kind)
    title = _(figs.KIND_TITLES[kind])
    q_label, k_label = SIDES[kind]
    if view == "overview":
        return layer_head_overview(weights, _("{title}: rows are layers, columns heads").format(title=title), mask=mask)
    layer = _layer(weights, layer)
    if view == "grid":
        return figs.head_grid(
            weights[layer], rows, keys, _("{title}, layer {layer}").format(title=title, layer=layer), mask=mask,
            max_height=max_height, max_width=max_width, tick_px=tick_px,
        )  # fmt: skip
    head = _head(weights, head)
    shown = figs.head_average(weights[layer]) if head == "average" else weights[layer, head]
    which = _("average of heads") if head == "average" else _("head {h}").format(h=head)
    return figs.attention_heatmap(
        shown, rows, keys, _("{title}, layer {layer}, {which}").format(title=title, layer=layer, which=which),
        mask=mask, query_label=q_label, key_label=k_label, max_height=max_height, max_width=max_width,
        tick_px=tick_px, snug=True,
    )  # fmt: skip


def _decoding(trace, layer, head, max_height: int, max_width: int, tick_px: int) -> go.Figure:
    """The greedy steps: row t the attention of step t's new position over the source (an encoder-decoder, as the
    decoding page's alignment) or over the text before it (decoder self-attention, causal)."""
    if trace is None or not trace.steps:
        raise ViewError("no decoding steps: this model writes nothing (an encoder-only model)")
    cross = trace.steps[0].cross.shape[-1] > 0
    maps = trace.cross_alignment() if cross else trace.decoder_self_matrix()
    keys: Sequence[str] = (
        trace.source_tokens if cross else [*trace.decoder_inputs(0), *trace.output_tokens][: maps.shape[-1]]
    )
    layer, head = _layer(maps, layer), _head(maps, head)
    shown = figs.head_average(maps[layer]) if head == "average" else maps[layer, head]
    which = _("average of heads") if head == "average" else _("head {h}").format(h=head)
    mask = None
    if not cross:  # step t's row reaches the prompt and the t tokens written before it
        first = maps.shape[-1] - maps.shape[-2] + 1
        mask = np.arange(maps.shape[-1])[None, :] >= first + np.arange(maps.shape[-2])[:, None]
    title = _("Output tokens (rows) against source tokens (columns), layer {layer}").format(layer=layer)
    if not cross:
        title = _("Output tokens (rows) against the text before them (columns), layer {layer}").format(layer=layer)
    return figs.attention_heatmap(
        shown, output_rows(trace.output_tokens, trace.decoder_inputs(0)[-1]), list(keys), f"{title}, {which}",
        mask=mask, key_label=N_("source") if cross else N_("decoder input"), max_height=max_height,
        max_width=max_width, tick_px=tick_px, snug=True,
    )  # fmt: skip
