"""Attention page: every layer and head of encoder self, decoder self and cross attention.

Only the chosen view is built and sent (a selector, not st.tabs, which would build every tab each run).
"""

from functools import partial

import streamlit as st

from i18n import N_, _
from tasks.gold import disagreements, gold_alignment, gold_example
from ui.serving import caches
from ui.shell.explain import explain_disagreement, explain_row
from ui.shell.navigation import view_menu
from ui.shell.presentation import chart_box, chart_text_px, presenting, show
from ui.shell.safe_text import esc
from ui.shell.session import require_session
from ui.shell.shapes import KIND_NAMES, capture_caption, gqa_note, kind_radio, present_kinds, special_keys, words
from ui.shell.url_state import Key, Keys, flag, intish
from ui.views import attention_long
from ui.views import interventions_ui as heads_ui
from viz import attention_figs as figs
from viz import overview_figs, sinks
from viz.tokens import capture_rows

st.title(_("Attention"))
session = require_session()

changes = heads_ui.head_switch("att", session)  # heads switched off, in the URL as att_off
lazy = attention_long.long_capture(session, changes)  # maps longer than a chart holds: drawn pooled (None: short)
cap = lazy if lazy is not None else caches.session_capture(session, changes=changes)
MAPS = attention_long.map_shapes(lazy, session.model.config) if lazy is not None else vars(cap)
KEYS = {"encoder_self": cap.source_tokens, "decoder_self": cap.target_tokens, "cross": cap.source_tokens}
SIDES = words(session.model.config).sides  # the shape's kinds -> (query side, key side), translated by the figure
KINDS = {k: (MAPS.get(k), capture_rows(cap, k), KEYS[k], *SIDES[k]) for k in SIDES}  # rows: viz/tokens.capture_rows
VIEWS = {
    "one": N_("One head"),
    "grid": N_("All heads of the layer"),
    "overview": N_("All layers × heads"),
    "sinks": N_("Attention sinks"),
    "bertviz": "bertviz",
}
# The sink option's label fits its quarter of the row at 1366 px in presentation mode; the help says what it does.
NO_SINK = N_("Without the first token")
NO_SINK_HELP = N_(
    "The first token's column left out (it often draws most of the attention, a sink), each row renormalised over "
    "the other tokens so that it sums to 1 again."
)
BERT_VIEWS = [N_("head view"), N_("model view")]  # values kept in English (URL), shown translated
URL = Keys(
    Key("att_view", "one", choices=tuple(VIEWS)),
    Key("att_kind", "cross", choices=tuple(KIND_NAMES)),
    Key("att_layer", cast=int),  # default and choices: the model's layers
    Key("att_head", "average", cast=intish),
    Key("att_bertviz", BERT_VIEWS[0], choices=tuple(BERT_VIEWS)),
    Key("att_nosink", False, cast=flag),
)
KINDS = present_kinds(KINDS, MAPS)
kind = URL.read("att_kind", choices=tuple(KINDS))
weights, rows, k_tokens, q_label, k_label = KINDS[kind]
n_layers, n_heads = weights.shape[:2]
HEAD_CHOICES = ["average", *range(n_heads)]

view = URL.read("att_view")
views, sink_box = st.columns([3, 1], vertical_alignment="center")  # the views and the sink option: one row
view_menu(VIEWS, "att_view", container=views)
left, mid, right = st.columns([4, 1, 1.3], vertical_alignment="center")  # one row of controls: a compact header
kind_radio(left, KINDS, "att_kind")
layer = URL.read("att_layer", n_layers - 1, range(n_layers))
LAYER_NAMES = figs.layer_names(n_layers, cap.windows.get(kind))  # a local layer's window named (Mistral, Gemma)
mid.selectbox(
    _("Layer"),
    list(range(n_layers)),
    key="att_layer",
    disabled=view in ("overview",),
    format_func=lambda i: LAYER_NAMES[i],
    label_visibility="collapsed",
)
head = URL.read("att_head", choices=HEAD_CHOICES)
right.selectbox(
    _("Head"),
    HEAD_CHOICES,
    key="att_head",
    disabled=view != "one",
    label_visibility="collapsed",
    format_func=lambda h: _("average of heads") if h == "average" else _("head {h}").format(h=h),
)
bert_view = URL.read("att_bertviz")
nosink = URL.read("att_nosink") and len(k_tokens) > 1 and view in ("one", "grid") and lazy is None
if view in ("one", "grid") and len(k_tokens) > 1 and lazy is None:
    sink_box.checkbox(_(NO_SINK), key="att_nosink", help=_(NO_SINK_HELP))
URL.write(att_view=view, att_kind=kind, att_layer=layer, att_head=head,
          att_bertviz=bert_view if view == "bertviz" else None, att_nosink=True if nosink else None)  # fmt: skip
gqa_note(session.model.config)

st.caption(
    capture_caption(cap, session.tokenizer, session.check.text)
    or _("Source: {source} tokens · decoder input: {target} tokens ({origin}) · model predicts: {predicted}").format(
        source=len(cap.source_tokens),
        target=len(cap.target_tokens),
        origin=_("the model’s own greedy output") if cap.generated else _("the target you typed"),
        predicted=esc(session.tokenizer.target.detokenize(cap.predicted_tokens)) or "∅",
    )
)
if changes and lazy is None:  # the effect on the output, from two eager captures: short inputs
    new = caches.cached_trace(session.key, session.check.text, (), 5, session.model, session.tokenizer, changes)
    effect = heads_ui.show_effect(session, changes, new.text)
masks = figs.layer_masks(kind, len(rows), len(k_tokens), cap.windows.get(kind)) if lazy is None else None
mask = masks[layer, 0] if masks is not None and masks.ndim == 4 else masks  # the chosen layer's (a local layer's band)
if nosink:  # the first key's column left out, each row renormalised over the rest (viz/sinks.py)
    weights, k_tokens = sinks.without_sink(weights), k_tokens[1:]
    mask = mask[:, 1:] if mask is not None else None
title = _(figs.KIND_TITLES[kind])
max_height, max_width = chart_box()
# A demo's gold alignment, over the cross-attention of the model's own output when that output is the gold target.
gold = None
if kind == "cross" and lazy is None:  # a demo's gold alignment (short inputs)
    if cap.generated:
        gold = gold_alignment(session.card, session.check.text, session.tokenizer.target.detokenize(cap.target_tokens))
    if gold is None and (known := gold_example(session.card, session.check.text)) is not None:
        st.caption(
            _(
                "The gold alignment is known for this input but not drawn: the decoder input is not the gold target “{target}”."
            ).format(target=esc(known.target))
        )
if lazy is not None:  # pooled maps and a window at full resolution (ui/views/attention_long.py)
    size = dict(max_height=max_height, max_width=max_width, tick_px=chart_text_px())
    key = (*caches.input_key(session), changes)  # what the pooled maps depend on
    attention_long.show_view(lazy, view, kind, layer, head, n_layers, rows, k_tokens, (q_label, k_label), title, key,
                             size)  # fmt: skip
elif view == "one":
    shown = figs.head_average(weights[layer]) if head == "average" else weights[layer, head]
    which = _("average of heads") if head == "average" else _("head {h}").format(h=head)
    show(
        figs.attention_heatmap(
            shown,
            rows,
            k_tokens,
            _("{title}, layer {layer}, {which}").format(title=title, layer=layer, which=which),
            mask=mask,
            query_label=q_label,
            key_label=k_label,
            gold=gold,  # row j writes output token j: the gold pairs' own indices
            max_height=max_height,
            max_width=max_width,
            tick_px=chart_text_px(),
            snug=True,
        ),
        key="att_one",
    )
    if gold and (odd := disagreements(shown, gold)):  # the worked example's puzzle, said in one line
        explain_disagreement(odd, len({t for _s, t in gold}), rows.tokens, k_tokens, session)
elif view == "grid":
    layer_title = _("{title}, layer {layer}").format(title=title, layer=layer)
    size = dict(max_height=max_height, max_width=max_width, tick_px=chart_text_px())
    show(attention_long.grid_of(weights[layer], rows, k_tokens, layer_title, mask, size), key="att_grid")
elif view == "sinks":  # the first token's share; the other special tokens' in the hover
    others = special_keys(k_tokens, session.tokenizer.target)
    extra = sinks.keys_share(weights, others, causal=mask is not None) if others else None
    show(sinks.sink_map(sinks.sink_share(weights, causal=mask is not None), k_tokens[0],
                        _("{title}: share of attention on the first token").format(title=title), extra,
                        " ".join(dict.fromkeys(k_tokens[i] for i in others))), key="att_sinks")  # fmt: skip
elif view == "overview":
    overview = _("{title}: rows are layers, columns heads").format(title=title)  # a local layer's own mask:
    show(overview_figs.layer_head_overview(weights, overview, mask=masks, layer_names=LAYER_NAMES), key="att_overview")
else:
    from viz.bertviz_view import head_view_html, model_view_html

    st.radio(_("bertviz view"), BERT_VIEWS, horizontal=True, key="att_bertviz", format_func=_)
    bert_kind = {"encoder_self": "Encoder", "decoder_self": "Decoder", "cross": "Cross"}[kind]
    if cap.cross.size:  # an encoder-decoder: its three kinds
        inputs = (cap.encoder_self, cap.decoder_self, cap.cross, cap.source_tokens, cap.target_tokens)
    else:  # one stack: its maps stand for all three (bertviz's own menus are hidden: the kind above picks the view)
        one, tokens = (
            (cap.decoder_self, cap.target_tokens) if cap.decoder_self.size else (cap.encoder_self, cap.source_tokens)
        )
        inputs = (one, one, one, tokens, tokens)
    # the decoder's rows (left) labelled with the tokens they write; an encoder's rows are its own tokens; bertviz's
    # menu offers the kinds the model has
    written = dict(written=cap.written_tokens) if cap.decoder_self.size else {}
    written |= {} if cap.cross.size else {"kinds": (bert_kind,)}
    changed = (changes,) if changes else ()  # the HTML of a changed model is kept apart
    # On the page the layer and kind menus above choose (they are in the link): bertviz's own are hidden. The
    # download, a page of its own, keeps them.
    if bert_view == "head view":  # the layer chosen above, alone: the page stays small for long inputs
        key, view_html = (
            ("head", bert_kind, layer),
            partial(head_view_html, kind=bert_kind, layer=layer, only_layer=True, **written),
        )
    else:
        every_layer = figs.bertviz_fits(*inputs[:3])
        if not every_layer:
            st.caption(
                _("A long input: the model view shows layer {layer} only (choose the layer above).").format(layer=layer)
            )
        shown_layer = None if every_layer else layer
        key, view_html = (
            ("model", bert_kind, shown_layer),
            partial(model_view_html, kind=bert_kind, layer=shown_layer, **written),
        )
    key, fill = (*caches.input_key(session), *key, *changed), presenting()  # a hall: the drawing fills its frame
    html = caches.cached_html((*key, fill), lambda: view_html(*inputs, menus=False, fill=fill))
    # in presentation mode no taller than the screen (the model view scrolls inside its frame)
    st.iframe(html, height=640 if bert_view == "head view" else (700 if presenting() else 900))
    st.download_button(
        _("Download this view (.html, works offline)"),
        lambda: caches.cached_html((*key, "menus"), lambda: view_html(*inputs)),
        file_name=f"bertviz-{bert_view.split()[0]}.html",
        mime="text/html",
        key="att_dl_html",
        on_click="ignore",
    )

if lazy is None:  # the effect, importance and the downloads read every map: short inputs
    if changes:
        heads_ui.effect_chart("att", effect)
    heads_ui.importance_panel("att", session, changes)
explain_row(
    "attention_map",
    "decoder_rows" if kind != "encoder_self" else "heads",
    "specials",
    *(["pieces"] if session.tokenizer.source.level == "subword" else []),  # Ġ, ▁, ## in the tokens shown
    "heads" if kind != "encoder_self" else "post_ln",
    config=session.model.config,
)
if lazy is None:
    caches.capture_downloads(session, "att", changes)
