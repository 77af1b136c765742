"""Attention page: every layer and head of encoder self, decoder self and cross attention.

Only the chosen view is built and sent (a selector, not st.tabs, which would build every tab each run).
"""

import streamlit as st

from pages import common
from viz import attention_figs as figs

st.title("Attention")
session = common.require_session()

cap = common.session_capture(session)
KINDS = {
    "encoder_self": (cap.encoder_self, cap.source_tokens, cap.source_tokens, "source", "source"),
    "decoder_self": (cap.decoder_self, cap.target_tokens, cap.target_tokens, "decoder input", "decoder input"),
    "cross": (cap.cross, cap.target_tokens, cap.source_tokens, "decoder input", "source"),
}
VIEWS = {"one": "One head", "grid": "All heads of the layer", "overview": "All layers × heads", "bertviz": "bertviz"}
kind = common.url_state("att_kind", "cross", list(KINDS))
weights, q_tokens, k_tokens, q_label, k_label = KINDS[kind]
n_layers, n_heads = weights.shape[:2]
HEAD_CHOICES = ["average", *range(n_heads)]

view = common.url_state("att_view", "one", list(VIEWS))
st.segmented_control("View", list(VIEWS), key="att_view", format_func=VIEWS.get, required=True,
                     label_visibility="collapsed")
left, mid, right = st.columns([2, 1, 1])
left.radio("Attention", list(KINDS), key="att_kind", horizontal=True, format_func=lambda k: figs.KIND_TITLES[k])
layer = common.url_state("att_layer", n_layers - 1, list(range(n_layers)), int)
mid.selectbox("Layer", list(range(n_layers)), key="att_layer", disabled=view in ("overview",))
head = common.url_state("att_head", "average", HEAD_CHOICES, lambda v: v if v == "average" else int(v))
right.selectbox("Head", HEAD_CHOICES, key="att_head", disabled=view != "one",
                format_func=lambda h: "average of heads" if h == "average" else f"head {h}")
common.write_url(att_view=view, att_kind=kind, att_layer=layer, att_head=head)

st.caption(
    f"Source: {len(cap.source_tokens)} tokens · decoder input: {len(cap.target_tokens)} tokens "
    f"({'the model’s own greedy output' if cap.generated else 'the target you typed'}) · "
    f"model predicts: {session.tokenizer.target.detokenize(cap.predicted_tokens) or '∅'}"
)
mask = figs.causal_mask(len(q_tokens), len(k_tokens)) if kind == "decoder_self" else None
title = figs.KIND_TITLES[kind]
if view == "one":
    shown = figs.head_average(weights[layer]) if head == "average" else weights[layer, head]
    which = "average of heads" if head == "average" else f"head {head}"
    st.plotly_chart(figs.attention_heatmap(shown, q_tokens, k_tokens, f"{title}, layer {layer}, {which}",
                                           mask=mask, query_label=q_label, key_label=k_label), key="att_one")
elif view == "grid":
    st.plotly_chart(figs.head_grid(weights[layer], q_tokens, k_tokens, f"{title}, layer {layer}", mask=mask), key="att_grid")
elif view == "overview":
    st.plotly_chart(figs.layer_head_overview(weights, f"{title}: rows are layers, columns heads", mask=mask),
                    key="att_overview")
else:
    from viz.bertviz_view import head_view_html, model_view_html

    bert_view = st.radio("bertviz view", ["head view", "model view"], horizontal=True, key="att_bertviz")
    bert_kind = {"encoder_self": "Encoder", "decoder_self": "Decoder", "cross": "Cross"}[kind]
    inputs = (cap.encoder_self, cap.decoder_self, cap.cross, cap.source_tokens, cap.target_tokens)
    if bert_view == "head view":
        html = common.cached_html((*common.input_key(session), "head", bert_kind, layer),
                                  lambda: head_view_html(*inputs, kind=bert_kind, layer=layer))
    else:
        html = common.cached_html((*common.input_key(session), "model", bert_kind),
                                  lambda: model_view_html(*inputs, kind=bert_kind))
    st.iframe(html, height=640 if bert_view == "head view" else 900)
    st.download_button("Download this view (.html, works offline)", lambda: html, file_name=f"bertviz-{bert_view.split()[0]}.html",
                       mime="text/html", key="att_dl_html", on_click="ignore")

common.capture_downloads(session, "att")
