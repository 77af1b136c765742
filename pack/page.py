"""The lecture pack: one self-contained HTML file with every view of a model for a list of inputs.

Opens from a USB stick with no server and no network: plotly.js is inlined once, the figures travel as
plotly JSON (figures' numbers as float32 typed arrays, attention weights as uint16 steps), and a small script (lecture_pack.js) draws them and
drives the layer / head selectors and the decoding step slider. Attention weights of each kind are
stored once per input, (L, H + 1, Tq, Tk) with the head average as head H, and the script cuts the
shown map out of them; so every layer and head is viewable without one figure per head.

Input records are duck-typed (no import of model/): `records` has .label, .n_parameters, .config (dict),
.inputs and .pe as built by pack.records.pack_records; each input has .text, .warnings, .capture
(a model.Capture) and .trace (a model.Trace).

The pack is written in the current language (i18n): its text, its figures, and the few words its script writes.
With records.live (pack.export.live_spec) the pack also carries the model, and a text box runs typed inputs
in the page (pack/live.py: onnxruntime-web and tokenizers.js, pack_text.js, pack_net.js, pack_live.js; the model's
own ONNX graphs and its tokenizer.json, docs/pack.md); charts are drawn as they come on screen.
"""

from __future__ import annotations

import base64
import html
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from i18n import N_, _, language
from pack.live import live_html, live_scripts, live_words, weight_files
from viz import decoding_figs, positional_figs
from viz.attention_figs import KIND_TITLES, attention_heatmap, geometry_rules, layer_masks, layer_names
from viz.overview_figs import layer_head_overview, numbered_tiles
from viz.tokens import FONT_FAMILY, LABEL, TEXT_COLOR, TICK_PX, Rows, capture_rows, display_tokens, plain_token

HERE = Path(__file__).resolve().parent / "static"
KINDS = ("encoder_self", "decoder_self", "cross")


def _weights(a: np.ndarray) -> str:
    """Attention weights in [0, 1] as little-endian uint16 steps of 1/65534 (65535 = NaN, a masked cell), base64.

    2 bytes a weight, off by at most 7.7e-6: half the size of float32, finer than the 3 decimals shown.
    """
    steps = np.where(np.isnan(a), 65535, np.round(np.clip(np.nan_to_num(a), 0.0, 1.0) * 65534))
    return base64.b64encode(np.ascontiguousarray(steps, dtype="<u2").tobytes()).decode("ascii")


class _Figures:
    """Figures by id, their layouts stripped of plotly's default template (sent once), numbers as float32."""

    def __init__(self) -> None:
        self.figures: dict[str, dict] = {}

    def add(self, fid: str, fig: go.Figure, keep_z: bool = True) -> str:
        for trace in fig.data:
            for name in ("x", "y", "z"):
                value = getattr(trace, name, None)
                if isinstance(value, np.ndarray) and value.dtype.kind == "f":
                    setattr(trace, name, value.astype(np.float32))
            if not keep_z and "z" in trace:
                trace.z = None
        spec = fig.to_plotly_json()
        spec["layout"].pop("template", None)
        for key, axis in spec["layout"].items():  # as the template (_template): x labels grow the bottom, y the left
            if re.fullmatch(r"[xy]axis\d*", key) and axis.get("automargin") is True:
                axis["automargin"] = "height" if key[0] == "x" else "width"
        self.figures[fid] = spec
        return fid


LAYER_AVERAGE = N_("{title}, layer {layer}, average of heads")  # a map's first title, the widest (a head's is shorter)


def _attention(figs: _Figures, prefix: str, kind: str, cap, rows: Rows, key_tokens) -> dict:
    """One kind of attention of one input (of the Capture `cap`): templates for the chosen map and the overview, and
    the weights. rows: by the app's one convention (viz/tokens.capture_rows): labelled with the token each writes, the
    hover naming the decoder input that wrote it. Masked cells (the causal mask, a local layer's sliding window) are
    drawn grey, as in the app, and a local layer is named with its window in the layer menu."""
    weights, windows = getattr(cap, kind), cap.windows.get(kind)
    L, H, Tq, Tk = weights.shape  # (L, H, Tq, Tk)
    mask = layer_masks(kind, Tq, Tk, windows)  # (Tq, Tk), (L, 1, Tq, Tk) per layer, or None
    data = np.concatenate([weights, weights.mean(axis=1, keepdims=True)], axis=1)  # (L, H + 1, Tq, Tk)
    if mask is not None:
        data = np.where(mask, np.nan, data)
    title = _(KIND_TITLES[kind])
    # titled as the script titles it first, the widest of its titles (a head's is shorter); snug: as wide as the map,
    # its labels and colour bar (never narrower than the title), the colour bar beside the map on any screen
    first = _(LAYER_AVERAGE).format(title=title, layer=L - 1)
    last = mask if mask is None or mask.ndim == 2 else mask[-1, 0]
    main = attention_heatmap(weights[-1].mean(axis=0), rows, key_tokens, first, last, snug=True)
    # The script writes 'query i: q<br>key j: k' per cell from the rows' hover and the keys, the weight from z:
    # one template serves every layer and head, and no string per cell travels in the file.
    main.data[0].update(customdata=None, hovertemplate="%{customdata}<br>" + _("weight %{z:.3f}") + "<extra></extra>")
    every = _("{title}: every layer (rows) and head (columns)").format(title=title)
    # every weight (the script fills the tiles from the input's maps), position numbers under the bottom row
    names = layer_names(L, windows)
    overview = numbered_tiles(layer_head_overview(weights, every, mask, max(Tq, Tk), layer_names=names), Tk, H)
    return {
        "kind": kind,
        "title": title,
        "shape": [L, H + 1, Tq, Tk],
        "layers": names if windows else [str(i) for i in range(L)],  # the layer menu's
        "z": _weights(data),
        "q": rows.hovers(),  # "<s> → la": the decoder input, then the token the row writes
        "k": display_tokens(key_tokens, 40),
        "main": figs.add(f"{prefix}-{kind}", main, keep_z=False),
        "overview": figs.add(f"{prefix}-{kind}-all", overview, keep_z=False),
    }


def _decoding(figs: _Figures, prefix: str, trace) -> dict:
    """Step-by-step greedy decoding: per step the candidates, the text, and the new position's attention rows."""
    steps = trace.steps
    T, S = len(steps), len(trace.source_tokens)
    L, H = steps[0].cross.shape[:2]
    inputs = trace.decoder_inputs(T - 1)  # <s> y_1 .. y_{T-1}: the keys of the last step's self-attention
    cross = np.stack([s.cross.reshape(L * H, S) for s in steps])  # (T, L*H, S)
    self_rows = np.full((T, L * H, T), np.nan, dtype=np.float32)  # (T, L*H, T): keys after step t not yet written
    for t, s in enumerate(steps):
        self_rows[t, :, : t + 1] = s.decoder_self.reshape(L * H, t + 1)
    top, text = [], []
    for s in steps:
        chosen = int(list(s.top_ids).index(s.token_id)) if s.token_id in s.top_ids else None
        bar = decoding_figs.top_k_bars(s.top_tokens, s.top_probs, chosen, _top_title(len(s.top_tokens))).data[0]
        top.append(
            {
                "x": [round(float(p), 5) for p in s.top_probs],
                "y": list(bar.y),
                "c": list(bar.marker.color),
                "t": list(bar.text),
            }
        )
        text.append(
            {
                "inputs": " ".join(plain_token(t) for t in trace.decoder_inputs(s.index)),
                "token": plain_token(s.token),
                "prob": f"{s.prob:.1%}",
            }
        )
    first = steps[0]
    topk = decoding_figs.top_k_bars(first.top_tokens, first.top_probs, 0, _top_title(len(first.top_tokens)))
    cross_fig = decoding_figs.step_rows(
        cross[0].reshape(L, H, S), trace.source_tokens, _("Cross-attention of the new position over the source")
    )
    self_fig = decoding_figs.step_rows(
        np.nan_to_num(self_rows[-1]).reshape(L, H, T), inputs, _("Decoder self-attention of the new position")
    )
    self_fig.data[0].hoverongaps = False  # no hover (so no token) over keys not yet written
    return {
        "n": T,
        "rows": L * H,
        "S": S,
        "T": T,
        "cross": _weights(cross),
        "self": _weights(self_rows),
        "top": top,
        "text": text,
        "stop": "</s>" if trace.stop_reason == "eos" else _("the length limit"),
        "output": trace.text,
        "topk_fig": figs.add(f"{prefix}-topk", topk),
        "cross_fig": figs.add(f"{prefix}-cross-rows", cross_fig, keep_z=False),
        "self_fig": figs.add(f"{prefix}-self-rows", self_fig, keep_z=False),
    }


def _top_title(k: int) -> str:
    return _("Top {k} next tokens").format(k=k)


def _pe_rows(cap) -> go.Figure:
    """The PE rows added to this input's source tokens, one row per token."""
    fig = positional_figs.pe_matrix(cap.source_pe, _("Positional rows added to this input's source tokens"))
    n = len(cap.source_tokens)
    fig.update_yaxes(
        title_text=_("source token"),
        tickmode="array",
        tickvals=list(range(n)),
        ticktext=[LABEL.format(i=i, token=t) for i, t in enumerate(display_tokens(cap.source_tokens))],
    )
    return fig


def _pe_views(figs: _Figures, prefix: str, cap) -> list[str]:
    """This input's positional views (figure ids): the rows added to its source tokens, embedding vs PE size per side."""
    sides = (
        ("source", cap.source_tokens, cap.source_embeddings, cap.source_pe),
        ("target", cap.target_tokens, cap.target_embeddings, cap.target_pe),
    )
    return [figs.add(f"{prefix}-pe-rows", _pe_rows(cap))] + [
        figs.add(
            f"{prefix}-pe-{side}",
            positional_figs.embedding_vs_pe(tokens, np.linalg.norm(emb, axis=-1), np.linalg.norm(rows, axis=-1), side),
        )
        for side, tokens, emb, rows in sides
    ]


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _select(cls: str, label: str, options: list[tuple[int, str]], selected: int) -> str:
    opts = "".join(f'<option value="{v}"{" selected" if v == selected else ""}>{_esc(t)}</option>' for v, t in options)
    return f'<label>{_esc(label)} <select class="{cls}">{opts}</select></label>'


def _attention_html(att: dict) -> str:
    L, H1 = att["shape"][0], att["shape"][1]
    layers = _select("layer", _("Layer"), list(enumerate(att["layers"])), L - 1)
    heads = _select("head", _("Head"), [(h, str(h)) for h in range(H1 - 1)] + [(H1 - 1, _("average of heads"))], H1 - 1)
    every = _esc(_("Every layer and head at once"))
    return (
        f'<div class="attention" data-ref="{_esc(att["ref"])}"><div class="controls">{layers} {heads}</div>'
        f'<div class="plot main" data-figure="{_esc(att["main"])}"></div>'
        f"<details open><summary>{every}</summary>"
        f'<div class="plot overview" data-figure="{_esc(att["overview"])}"></div></details></div>'
    )


def _decoding_html(dec: dict, ref: str) -> str:
    n = dec["n"]
    step_text = _esc(_("Decoder input so far: {inputs} → writes {token} (p = {prob})")).format(
        inputs='<code class="inputs"></code>',
        token='<b><code class="token"></code></b>',
        prob='<span class="prob"></span>',
    )
    previous, step, next_, first = (
        _esc(_("Previous")),
        _esc(_("Step")),
        _esc(_("Next")),
        _esc(_("Step {i} of {n}").format(i=1, n=n)),
    )
    return (
        f'<div class="decoding" data-ref="{_esc(ref)}"><div class="controls">'
        f'<button class="prev" type="button">◀ {previous}</button>'
        f'<input class="step" type="range" min="0" max="{n - 1}" value="0" step="1" aria-label="{step}">'
        f'<button class="next" type="button">{next_} ▶</button> '
        f'<span class="step-label">{first}</span></div>'
        f'<p class="step-text">{step_text}</p>'
        f'<div class="row"><div class="plot topk" data-figure="{_esc(dec["topk_fig"])}"></div>'
        f'<div class="col"><div class="plot cross-rows" data-figure="{_esc(dec["cross_fig"])}"></div>'
        f'<div class="plot self-rows" data-figure="{_esc(dec["self_fig"])}"></div></div></div>'
        '<p class="output-line">'
        + _esc(_("Output: {output} · stopped at {stop}.")).format(
            output=f"<code>{_esc(dec['output'] or '∅')}</code>", stop=_esc(dec["stop"])
        )
        + "</p></div>"
    )


def _pe_section(figs: _Figures, pe) -> str:
    if pe.kind == "none":  # the sentence the app's Positional page says of such a model, in the pack's language
        heading = _esc(_("Positional encoding of this model"))
        text = _esc(
            _(
                "This model adds no positional encoding: the embeddings alone, so attention cannot tell where a token is."
            )
        )
        return f'<section id="pe"><h2>{heading}</h2><p>{text}</p></section>'
    if pe.inside_text:  # a kind acting inside attention: nothing added, the table is zeros
        heading = _esc(_("Positional encoding of this model"))
        return f'<section id="pe"><h2>{heading}</h2><p>{_esc(_(pe.inside_text))}</p></section>'
    P, D = pe.table.shape
    parts = [
        figs.add(
            "pe-matrix",
            positional_figs.pe_matrix(pe.table, _("Positional table: {P} positions × {D} dimensions").format(P=P, D=D)),
        )
    ]
    if pe.wavelengths is not None:
        parts.append(figs.add("pe-sinusoids", positional_figs.sinusoid_curves(pe.table, pe.dims, pe.wavelengths)))
    parts.append(figs.add("pe-offsets", positional_figs.offset_curves(pe.dots, pe.positions)))
    if pe.kind == "sinusoidal":
        what = _(
            "This model adds a sinusoidal positional encoding ({layout} layout, base {base}); the same table for every input."
        ).format(layout=pe.layout, base=f"{pe.base:g}")
        note = _("The dot product PE(p) · PE(p+k) depends on the offset k only: the curves lie on top of each other.")
    else:
        what = _("This model adds a learned positional encoding; the same table for every input.")
        note = _("A learned table: nothing forces the curves to coincide.")
    plots = "".join(f'<div class="plot" data-figure="{fid}"></div>' for fid in parts)
    heading = _esc(_("Positional encoding of this model"))
    return f'<section id="pe"><h2>{heading}</h2><p>{_esc(what)} {_esc(note)}</p>{plots}</section>'


def lecture_pack_html(records, title: str = "") -> str:
    """The whole pack as one HTML string (see the module docstring for what `records` holds), in the current language."""
    title = title or _("Lecture pack")
    if not records.inputs:
        raise ValueError("a lecture pack needs at least one input")
    figs, data, toc, body = _Figures(), {"inputs": []}, [], []
    live = getattr(records, "live", None)  # the model for the page to run (pack.export.live_spec), or None
    for n, item in enumerate(records.inputs):
        cap, trace, prefix = item.capture, item.trace, f"in{n}"
        if not (cap.source_tokens and cap.target_tokens):  # a decoder-only or encoder-only model: one sequence
            one, link, section = _one_stack_input(figs, n, item, records.pe)
            data["inputs"].append(one)
            toc.append(link)
            body.append(section)
            continue
        keys = {"encoder_self": cap.source_tokens, "decoder_self": cap.target_tokens, "cross": cap.source_tokens}
        atts = []
        for kind in KINDS:
            att = _attention(figs, prefix, kind, cap, capture_rows(cap, kind), keys[kind])
            att["ref"] = f"{n}/{kind}"
            atts.append(att)
        dec = _decoding(figs, prefix, trace) if trace.steps else None
        data["inputs"].append(
            {
                "attention": {a["kind"]: {k: a[k] for k in ("shape", "z", "title", "q", "k")} for a in atts},
                "decoding": dec,
            }
        )
        inside = bool(records.pe.inside_text)  # nothing added to the embeddings: no rows or norms to draw
        pe_ids = [] if inside else _pe_views(figs, prefix, cap)
        label = _("Input {n}: {text}").format(n=n + 1, text=item.text)
        links = [_esc(_("attention")), _esc(_("positional encoding")), _esc(_("decoding"))]
        toc.append(
            f'<li><a href="#{prefix}">{_esc(label)}</a> · <a href="#{prefix}-attention">{links[0]}</a> · '
            f'<a href="#{prefix}-pe">{links[1]}</a> · <a href="#{prefix}-decoding">{links[2]}</a></li>'
        )
        warnings = "".join(f'<p class="warning">{_esc(_(w))}</p>' for w in item.warnings)
        kinds_html = "".join(f'<h4 id="{prefix}-{a["kind"]}">{_esc(a["title"])}</h4>{_attention_html(a)}' for a in atts)
        pe_html = "".join(f'<div class="plot" data-figure="{fid}"></div>' for fid in pe_ids)
        dec_html = _decoding_html(dec, str(n)) if dec else "<p>" + _esc(_("The model wrote nothing.")) + "</p>"
        source = f"<code>{_esc(' '.join(plain_token(t) for t in cap.source_tokens))}</code>"
        output = f"<code>{_esc(' '.join(plain_token(t) for t in cap.target_tokens))}</code>"
        link = '<a href="#pe">' + _esc(_("Positional encoding of this model")) + "</a>"
        if inside:  # the kind's own sentence (true of every input, the typed ones too), then the model's section
            same = f"{_esc(_(records.pe.inside_text))} → {link}"
        else:
            same = _esc(
                _("The table, its sinusoids and the dot product against offset are the same for every input: {link}.")
            ).format(link=link)
        words = {  # escaped, for the HTML below
            "source": _esc(_("Source tokens:")),
            "output": _esc(_("Model output (the decoder input below):")),
            "attention": _esc(_("Attention")),
            "pe": _esc(_("Positional encoding")),
            "decoding": _esc(_("Step-by-step greedy decoding")),
        }
        body.append(
            f'<section id="{prefix}" class="input"><h2>{_esc(label)}</h2>{warnings}'
            f"<p>{words['source']} {source}<br>"
            f"{words['output']} {output}</p>"
            f'<h3 id="{prefix}-attention">{words["attention"]}</h3>{kinds_html}'
            f'<h3 id="{prefix}-pe">{words["pe"]}</h3><p>{same}</p>{pe_html}'
            f'<h3 id="{prefix}-decoding">{words["decoding"]}</h3>{dec_html}</section>'
        )
    pe_html = _pe_section(figs, records.pe)
    data["figures"] = figs.figures
    data["template"] = _template()
    if live is not None:  # a typed input's maps laid out as the app lays them out (pack_live.js)
        data["geometry"] = geometry_rules()
    data["text"] = {  # the words lecture_pack.js writes; {placeholders} filled there
        "layer_head": _("{title}, layer {layer}, head {head}"),
        "layer_average": _(LAYER_AVERAGE),
        "cell": _("query {i}: {q}<br>key {j}: {k}"),
        "step": _("Step {i} of {n}"),
        "live": {**live_words(live), "first": records.inputs[0].text},
    }
    cfg = records.config
    about = _(
        "{parameters} parameters · {encoder} encoder and {decoder} decoder layers · {heads} heads · "
        "d_model {d_model} · made {when} UTC"
    ).format(
        parameters=f"{records.n_parameters:,}",
        encoder=cfg.get("n_encoder_layers"),
        decoder=cfg.get("n_decoder_layers"),
        heads=cfg.get("n_heads"),
        d_model=cfg.get("d_model"),
        when=f"{datetime.now(UTC):%Y-%m-%d %H:%M}",
    )
    lang = "zh-CN" if language() == "zh" else language()
    contents, pe_link = _esc(_("Contents")), _esc(_("Positional encoding of this model"))
    try_link = _esc(_("Try your own input"))
    model_scripts, box_script = live_scripts(live)
    page = [
        f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_esc(title)}: {_esc(records.label)}</title><style>{(HERE / 'lecture_pack.css').read_text()}</style>",
        "</head><body>",
        f"<header><h1>{_esc(title)}: {_esc(records.label)}</h1><p>{_esc(about)}</p></header>",
        f'<nav><h2>{contents}</h2><ol>{"".join(toc)}</ol><p><a href="#live">{try_link}</a> · '
        f'<a href="#pe">{pe_link}</a></p></nav>',
        live_html(live, getattr(records, "live_note", ""), records.inputs[0].text, body[0]),
        model_scripts,  # the model starts opening here, while the rest is read (plotly's 4.7 MB too) and drawn
        '<div id="static">',
        pe_html,
        *body,
        "</div>",
        f"<script>{get_plotlyjs()}</script>",
        f'<script type="application/json" id="pack-data">{_json_for_script(data)}</script>',
        f"<script>{(HERE / 'lecture_pack.js').read_text()}</script>",
        box_script,
        "</body></html>",
    ]
    return "".join(page)


def lecture_pack_files(records, title: str = "") -> dict[str, bytes]:
    """The pack as files: {"index.html": the page} and, for a folder pack (pack.export.folder_pack),
    its weights beside it (pack/live.weight_files): write them all into one folder."""
    live = getattr(records, "live", None)
    return {"index.html": lecture_pack_html(records, title).encode("utf-8"), **weight_files(live)}


# The Attention page's one-line summary of a decoder-only and of an encoder-only capture (ui/shell/shapes.py, same msgids)
SEQUENCE = N_("Prompt: {prompt} tokens · continuation (the model’s own greedy output): {written} tokens “{text}”")
ENCODED = N_("Input: {n} tokens, as the model’s tokenizer writes them (its special tokens included)")


def _one_stack_input(figs: _Figures, n: int, item, pe) -> tuple[dict, str, str]:
    """One input of a decoder-only or encoder-only model, as the app's Attention page shows it: the self-attention of
    the whole sequence (the prompt and the model's own continuation; or the encoded input), its summary line, and the
    positional views of that sequence. (data item, contents line, section HTML)."""
    cap, trace, prefix = item.capture, item.trace, f"in{n}"
    decoder = bool(cap.target_tokens)
    kind, tokens = ("decoder_self", cap.target_tokens) if decoder else ("encoder_self", cap.source_tokens)
    att = _attention(figs, prefix, kind, cap, capture_rows(cap, kind), tokens)
    att["ref"] = f"{n}/{kind}"
    if decoder:
        caption = _(SEQUENCE).format(
            prompt=len(trace.source_tokens), written=len(cap.target_tokens) - len(trace.source_tokens), text=trace.text
        )
    else:
        caption = _(ENCODED).format(n=len(tokens))
    label = _("Input {n}: {text}").format(n=n + 1, text=item.text)
    pe_ids = []
    if not pe.inside_text:  # positions added to the embeddings: the rows and their size against the tokens'
        side = "target" if decoder else "source"
        emb, rows = (cap.target_embeddings, cap.target_pe) if decoder else (cap.source_embeddings, cap.source_pe)
        if not decoder:
            pe_ids.append(figs.add(f"{prefix}-pe-rows", _pe_rows(cap)))
        norms = positional_figs.embedding_vs_pe(
            tokens, np.linalg.norm(emb, axis=-1), np.linalg.norm(rows, axis=-1), "sequence" if decoder else "text"
        )
        pe_ids.append(figs.add(f"{prefix}-pe-{side}", norms))
    link = '<a href="#pe">' + _esc(_("Positional encoding of this model")) + "</a>"
    same = (
        f"{_esc(_(pe.inside_text))} → {link}"
        if pe.inside_text
        else _esc(
            _("The table, its sinusoids and the dot product against offset are the same for every input: {link}.")
        ).format(link=link)
    )
    words = [_esc(_("attention")), _esc(_("positional encoding"))]
    toc = (
        f'<li><a href="#{prefix}">{_esc(label)}</a> · <a href="#{prefix}-attention">{words[0]}</a> · '
        f'<a href="#{prefix}-pe">{words[1]}</a></li>'
    )
    warnings = "".join(f'<p class="warning">{_esc(_(w))}</p>' for w in item.warnings)
    plots = "".join(f'<div class="plot" data-figure="{fid}"></div>' for fid in pe_ids)
    headings = _esc(_("Attention")), _esc(_("Positional encoding"))
    section = (
        f'<section id="{prefix}" class="input"><h2>{_esc(label)}</h2>{warnings}'
        f'<p class="sequence"><span class="caption">{_esc(caption)}</span><br>'
        f"<code>{_esc(' '.join(plain_token(t) for t in tokens))}</code></p>"
        f'<h3 id="{prefix}-attention">{headings[0]}</h3>'
        f'<h4 id="{prefix}-{kind}">{_esc(att["title"])}</h4>{_attention_html(att)}'
        f'<h3 id="{prefix}-pe">{headings[1]}</h3><p>{same}</p>{plots}</section>'
    )
    data = {"attention": {kind: {k: att[k] for k in ("shape", "z", "title", "q", "k")}}, "decoding": None}
    return data, toc, section


def _template() -> dict:
    """plotly's white template (the app's charts are on white, not plotly's grey), dark text at least TICK_PX high."""
    tpl = pio.templates["plotly_white"].to_plotly_json()
    tpl["data"] = {k: v for k, v in tpl["data"].items() if k in ("heatmap", "bar", "scatter")}  # the kinds drawn
    tpl["layout"]["font"] = {"family": FONT_FAMILY, "size": TICK_PX, "color": TEXT_COLOR}
    tpl["layout"]["hoverlabel"] = {"font": {"size": TICK_PX}}
    # Labels past the chart's edge stay drawn: with plotly's default for a colour bar ("hide past div") it measures
    # every label again after each label is placed, each measurement laying the chart out again.
    # An x axis's labels grow the bottom margin only, a y axis's the left (a first label wider than its cell no longer
    # widens the left margin): lecture_pack.js keeps a redrawn chart's margins, which then rarely change.
    for axis, grows in (("xaxis", "height"), ("yaxis", "width")):
        tpl["layout"].setdefault(axis, {}).update(ticklabeloverflow="allow", automargin=grows)
    for trace in tpl["data"].get("heatmap", []):
        trace.setdefault("colorbar", {})["ticklabeloverflow"] = "allow"
    return tpl


def _json_for_script(data: dict) -> str:
    """JSON safe inside a <script> element: no '<', '>' or '&' that could end it or open a comment."""
    text = pio.json.to_json_plotly(data)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
