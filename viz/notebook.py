"""The app's attention views in a Jupyter, JupyterLab, VS Code, Colab or marimo notebook, as one anywidget.

    from model import load_checkpoint
    from viz.notebook import show
    model, tokenizer = load_checkpoint("checkpoints/reverse")
    show(model, tokenizer, "stressed")

Views: one head (hover a cell for its query, key and weight), all heads of a layer, every layer x head, and the greedy
steps; clicking a head in the two overviews selects its layer and head and opens it. The numbers are computed here,
in Python (`widget_data`, from a model.Capture and a model.Trace read by their fields); the front end
(notebook_widget.js, shipped beside this file) only draws them, with no request outside the notebook. Where widgets
do not run (a notebook saved and shown on GitHub or nbviewer) the output shows a static picture of the head view
(`static_svg`).

`show` is the one place in viz/ that runs the model: it imports model/ (and so torch) when called, never when this
module is imported.
"""

from __future__ import annotations

import html
from pathlib import Path

import anywidget
import numpy as np
import traitlets

from i18n import _

from .attention_figs import COLORSCALE, KIND_TITLES, MASKED_COLOR
from .figure_views import kinds_present
from .tokens import capture_rows, output_rows, plain_token

ESM = Path(__file__).with_name("notebook_widget.js")
VIEWS = ("head", "heads", "model", "decoding")
MAX_WEIGHTS = 4_000_000  # numbers sent to the notebook (every kind, layer and head): about 24 MB of JSON


def _colours() -> list[list]:
    """The app's colour scale (COLORSCALE, as plotly resolves it) as [[position, "rgb(...)"], ...]."""
    import plotly.graph_objects as go

    return [list(step) for step in go.Heatmap(colorscale=COLORSCALE).colorscale]


def _rounded(a: np.ndarray) -> list:
    """Weights as nested lists of 4-decimal floats (NaN, a masked cell, as None)."""
    a = np.round(np.asarray(a, dtype=np.float64), 4)
    return np.where(np.isfinite(a), a, None).tolist()


def widget_data(capture, trace=None) -> dict:
    """Everything the widget draws, as JSON-ready data: per attention kind its title, row and key labels, whether
    it is causal, and its (L, H, Tq, Tk) weights; the greedy steps' (L, H, T, Tk) rows where a trace is given."""
    present = kinds_present(capture)
    total = sum(getattr(capture, k).size for k in present)
    if trace is not None and trace.steps:
        total += trace.cross_alignment().size
    if total > MAX_WEIGHTS:
        raise ValueError(
            f"{total} attention weights are more than the notebook view takes ({MAX_WEIGHTS}): a shorter text"
        )
    kinds = {}
    for kind in present:
        rows = capture_rows(capture, kind)
        keys = capture.source_tokens if kind in ("encoder_self", "cross") else capture.target_tokens
        kinds[kind] = dict(
            title=_(KIND_TITLES[kind]),
            rows=[rows.text(i) for i in range(len(rows))],
            keys=[plain_token(t) for t in keys],
            causal=kind == "decoder_self",
            weights=_rounded(getattr(capture, kind)),
        )
    data = dict(kinds=kinds, colours=_colours(), masked=MASKED_COLOR, labels=_labels(), decoding=None)
    if trace is not None and trace.steps:
        cross = trace.steps[0].cross.shape[-1] > 0
        maps = trace.cross_alignment() if cross else trace.decoder_self_matrix()
        keys = trace.source_tokens if cross else [*trace.decoder_inputs(0), *trace.output_tokens][: maps.shape[-1]]
        if not cross:  # step t reaches the prompt and the t tokens written before it: the rest masked (None)
            first = maps.shape[-1] - maps.shape[-2] + 1
            maps = np.where(np.arange(maps.shape[-1]) >= first + np.arange(maps.shape[-2])[:, None], np.nan, maps)
        rows = output_rows(trace.output_tokens, trace.decoder_inputs(0)[-1])
        data["decoding"] = dict(
            title=_("Output tokens (rows) against source tokens (columns)")
            if cross
            else _("Output tokens (rows) against the text before them (columns)"),
            rows=[rows.text(i) for i in range(len(rows))],
            keys=[plain_token(t) for t in keys],
            causal=False,
            weights=_rounded(maps),
        )
    return data


def _labels() -> dict:
    """The widget's words, in the current language (i18n)."""
    return dict(
        head=_("One head"), heads=_("All heads of the layer"), model=_("All layers × heads"),
        decoding=_("Decoding steps"), layer=_("layer {i}"), head_n=_("head {h}"), average=_("average of heads"),
        query=_("query"), key=_("key"), weight=_("weight"), pick=_("Click a head to open it."),
    )  # fmt: skip


class AttentionWidget(anywidget.AnyWidget):
    """The views of one capture: `data` (widget_data) and the selection (view, kind, layer, head; head -1 is the
    average of the heads), kept in step with the front end both ways."""

    _esm = ESM
    data = traitlets.Dict().tag(sync=True)
    view = traitlets.Unicode("head").tag(sync=True)
    kind = traitlets.Unicode("").tag(sync=True)
    layer = traitlets.Int(0).tag(sync=True)
    head = traitlets.Int(-1).tag(sync=True)

    def _repr_mimebundle_(self, **kwargs):
        """The widget, and a static picture of its head view for where widgets do not run (GitHub, nbviewer)."""
        bundle = super()._repr_mimebundle_(**kwargs)
        data, meta = bundle if isinstance(bundle, tuple) else (bundle, {})
        data = {**(data or {}), "text/html": static_html(self.data, self.kind, self.layer, self.head)}
        return data, meta


def attention_widget(capture, trace=None, kind: str | None = None, layer: int | None = None) -> AttentionWidget:
    """The widget for a capture (and a trace for the decoding steps), on `kind` (default: cross where there is one)
    and `layer` (default: the last), the average of the heads."""
    data = widget_data(capture, trace)
    kind = kind or next(iter(data["kinds"]), "")
    n_layers = len(data["kinds"][kind]["weights"]) if kind else 0
    return AttentionWidget(data=data, kind=kind, layer=n_layers - 1 if layer is None else layer, head=-1)


def show(model, tokenizer, text: str, **options) -> AttentionWidget:
    """Run the model on the text (model.capture, and greedy decoding where it writes) and return the widget; as the
    last line of a cell the notebook displays it. options: attention_widget's kind and layer."""
    from model import capture, greedy_decode  # the model only when asked: importing viz never imports torch

    cap = capture(model, tokenizer, text)
    trace = greedy_decode(model, tokenizer, text) if model.config.has_decoder else None
    return attention_widget(cap, trace, **options)


def _colour(colours: list[list], v: float) -> str:
    """The colour of weight v (0..1) on the scale, interpolated as plotly does between its steps."""
    v = min(1.0, max(0.0, v))
    for (p0, c0), (p1, c1) in zip(colours, colours[1:]):
        if v <= p1:
            t = 0.0 if p1 == p0 else (v - p0) / (p1 - p0)
            a, b = (np.array([float(x) for x in c[c.index("(") + 1 : -1].split(",")]) for c in (c0, c1))
            r, g, bl = np.rint(a + (b - a) * t).astype(int)
            return f"rgb({r},{g},{bl})"
    return colours[-1][1]


def static_svg(data: dict, kind: str, layer: int, head: int, cell: int = 22) -> str:
    """The head view as a self-contained SVG (cells, token labels as text): what a saved notebook shows."""
    if kind not in data.get("kinds", {}):
        return "<svg width='1' height='1'></svg>"
    k = data["kinds"][kind]
    w = np.asarray(k["weights"][layer], dtype=np.float64)  # (H, Tq, Tk)
    m = np.nanmean(w, axis=0) if head < 0 else w[head]
    left, top = 12 + 7 * max((len(r) for r in k["rows"]), default=1), 30
    width, height = left + cell * m.shape[1] + 10, top + cell * m.shape[0] + 12 + 7 * max(map(len, k["keys"] or [""]))
    parts = []
    for i, row in enumerate(m):
        for j, v in enumerate(row):
            fill = data["masked"] if not np.isfinite(v) or (k["causal"] and j > i) else _colour(data["colours"], v)
            parts.append(
                f"<rect x='{left + j * cell}' y='{top + i * cell}' width='{cell}' height='{cell}' fill='{fill}'/>"
            )
    esc = html.escape
    rows = "".join(
        f"<text x='{left - 4}' y='{top + i * cell + cell * 0.68}' text-anchor='end'>{esc(r)}</text>"
        for i, r in enumerate(k["rows"])
    )
    keys = "".join(
        f"<text transform='translate({left + j * cell + cell * 0.65},{top + m.shape[0] * cell + 6}) rotate(90)'>"
        f"{esc(t)}</text>"
        for j, t in enumerate(k["keys"])
    )
    which = data["labels"]["average"] if head < 0 else data["labels"]["head_n"].format(h=head)
    title = f"{k['title']}, {data['labels']['layer'].format(i=layer)}, {which}"
    return (
        f"<svg width='{width}' height='{height}' font-family='sans-serif' "
        f"font-size='12'><text x='4' y='18' font-size='14'>{esc(title)}</text>{''.join(parts)}{rows}{keys}</svg>"
    )


def static_html(data: dict, kind: str, layer: int, head: int) -> str:
    """static_svg in a figure block (the text/html fallback of the widget's output)."""
    return f"<figure class='transformer-viz-static'>{static_svg(data, kind, layer, head)}</figure>"
