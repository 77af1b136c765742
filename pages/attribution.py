"""Attribution page: is attention an explanation? Rollout, flow, gradients and occlusion beside attention.

Every selection lives in the URL: attr_tok (output token), attr_layer / attr_head (the raw attention shown: cross-attention,
or the self-attention of a decoder-only or encoder-only model),
attr_matrix (the method of the matrix view), attr_base / attr_steps (integrated gradients), attr_occ (occlusion's
replacement), attr_n (fresh examples), attr_off (heads switched off).
"""

import streamlit as st

from i18n import _, message_of
from model.analysis import attribution as attr
from model.analysis.attribution_agreement import REFERENCE, agreement
from tasks.gold import gold_alignment
from ui.serving import caches
from ui.shell.presentation import chart_box, chart_text_px, show
from ui.shell.safe_text import md
from ui.shell.session import require_session
from ui.shell.shapes import NO_ATTRIBUTION, attributable, attribution_note, requires, say
from ui.shell.shapes import words as words_of_shape
from ui.shell.url_state import Key, Keys, intish
from ui.views import attribution_ui as ui
from ui.views import interventions_ui as heads_ui
from viz import attention_figs
from viz import attribution_figs as figs
from viz.tokens import written_rows

MAX_TOKENS = 32  # source and decoder tokens the page explains: every demo input (24 letters, 30-character dates)
MAX_OUTPUT = 64  # output tokens of a decoder-only model: it continues by 50 tokens by default (DEFAULT_SLACK)
st.title(_("Attribution: is attention an explanation?"))
session = require_session()
requires(attributable(session.model), NO_ATTRIBUTION)  # something written or predicted to explain
attribution_note(session.model.config)
changes = heads_ui.head_switch("attr", session)
cap = caches.session_capture(session, changes=changes)
n_source, n_output = attr.explained_sizes(session.model, session.tokenizer, session.check.text, cap)
most_output = MAX_TOKENS if session.model.config.has_encoder else MAX_OUTPUT
if n_source > MAX_TOKENS or n_output > most_output:
    # flow solves a max-flow per output token over every layer's graph; integrated gradients halves its path
    # until complete: on a server, the work of five methods is bounded before it starts
    st.info(
        _(
            "This page explains inputs of at most {n} source tokens with at most {m} output tokens on this server; "
            "this one has {s} and {t}. Try a shorter input."
        ).format(n=MAX_TOKENS, m=most_output, s=n_source, t=n_output)
    )
    st.stop()

N_CHOICES = ui.FRESH_CHOICES
URL = Keys(
    *ui.SETTING_KEYS,  # each method's settings, from the registry (model/analysis/attribution_methods/)
    Key("attr_methods", ui.DEFAULT_SHOWN, choices=attr.METHODS, many=True),  # the methods computed and shown
    Key("attr_tok", 0, cast=int),  # choices: the output's tokens
    Key("attr_layer", cast=int),  # default and choices: the model's layers
    Key("attr_head", "average", cast=intish),
    Key("attr_matrix", REFERENCE, choices=(*attr.METHODS, "cross")),
    Key("attr_n", 10, choices=N_CHOICES, cast=int),
)
shown = ui.choose_methods(URL)
settings = ui.settings_controls(URL, session.tokenizer)

try:
    results = ui.computed(session, changes, settings, shown)
except ValueError as err:  # a setting or intervention that does not fit this model
    st.error(_("Could not compute the attributions: {reason}").format(reason=md(message_of(err))))
    st.stop()
outputs = results[REFERENCE].output_tokens
source = results[REFERENCE].source_tokens
T = len(outputs)
# the raw attention beside the methods: cross-attention, or (one stack) the self-attention rows that write the output
kind, maps = attr.attention_over_source(cap, len(source))  # (L, H, rows, S)
words = ui.ATTENTION_WORDS[kind]
n_layers, n_heads = maps.shape[:2]
if T == 0:
    st.info(_("The output is empty: there is nothing to explain."))
    st.stop()

HEADS = ["average", *range(n_heads)]
MATRICES = [*shown, "cross"]
tok = URL.read("attr_tok", choices=range(T))
layer = URL.read("attr_layer", n_layers - 1, range(n_layers))
head = URL.read("attr_head", choices=HEADS)
matrix = URL.read("attr_matrix", choices=MATRICES)
left, mid, right = st.columns([3, 1, 1.3], vertical_alignment="bottom")
left.selectbox(_("Output token to explain"), list(range(T)), key="attr_tok",
               format_func=lambda t: f"{t}: {outputs[t]}")  # fmt: skip
mid.selectbox(_("Layer"), list(range(n_layers)), key="attr_layer", format_func=lambda i: _("layer {i}").format(i=i))
right.selectbox(_("Head"), HEADS, key="attr_head",
                format_func=lambda h: _("average of heads") if h == "average" else _("head {h}").format(h=h))  # fmt: skip
URL.write(attr_tok=tok, attr_layer=layer, attr_head=head, attr_matrix=matrix)

max_height, max_width = chart_box()
raw = maps[layer].mean(axis=0) if head == "average" else maps[layer, head]  # (rows, S)
average = attention_figs.head_average(maps[layer])
head_name = _("average of heads") if head == "average" else _("head {h}").format(h=head)
panels = [(ui.title(m), results[m].scores[tok]) for m in shown]
panels += [(_(words.panel).format(layer=layer, head=head_name), raw[tok])]
if head != "average":
    panels += [(_(words.average).format(layer=layer), average[tok])]
show(
    figs.source_bars(panels, source, _("What explains output token {t} “{token}”?").format(t=tok, token=outputs[tok]),
                     width_px=max_width, tick_px=chart_text_px()),
    key="attr_bars",
    top_px=450,  # below the controls (and a one-sequence model's note), measured in presentation mode at 1366x768
)  # fmt: skip
st.caption(_("Each panel keeps its own scale: shares of 1, drops of log-probability and gradients are not comparable."))

shape_words = words_of_shape(session.model.config)
st.subheader(_(shape_words.matrix))
st.segmented_control(_("Matrix of"), MATRICES, key="attr_matrix", required=True,
                     format_func=lambda m: _(words.choice) if m == "cross" else ui.title(m))  # fmt: skip
matrix_scores = raw[:T] if matrix == "cross" else results[matrix].scores
show(
    figs.score_matrix(matrix_scores, written_rows(outputs, results[REFERENCE].row_inputs), source,
                      _(words.name) if matrix == "cross" else ui.title(matrix),
                      output_label=_(shape_words.writes), source_label=_(shape_words.reads), chosen=tok, max_width=max_width,
                      tick_px=chart_text_px()),
    key="attr_matrix_chart",
)  # fmt: skip

st.subheader(_("Which explanation agrees with what the model uses?"))
written = session.tokenizer.target.detokenize(outputs)
pairs = gold_alignment(session.card, session.check.text, written) if cap.generated else None
st.markdown(_("For this input:"))
ui.show_table(agreement(results, maps, pairs), kind)
n = URL.read("attr_n")
URL.write(attr_n=n)
recipe = session.card.get("recipe") if isinstance(session.card, dict) else None
is_demo = isinstance(recipe, dict) and "train_size" in recipe and "seed" in session.card and "task" in session.card
if is_demo:
    cols = st.columns([1, 3], vertical_alignment="bottom")
    cols[0].selectbox(_("Fresh examples"), N_CHOICES, key="attr_n")
    if ui.has_fresh(session, changes, n, settings, shown) or cols[1].button(
        _("Average over {n} fresh examples of this demo's task").format(n=n), key="attr_fresh_go"
    ):
        bar = st.progress(0.0, text=_("Explaining {n} fresh examples…").format(n=n))
        table = ui.fresh_agreement(session, changes, n, settings, shown, lambda d, total: bar.progress(d / total))
        bar.empty()
        if table is not None:  # None: stopped in its worker (deadline, memory), the reason shown
            st.markdown(
                _("Averaged over {n} fresh examples (inputs the model never trained on):").format(n=table.examples)
            )
            ui.show_table(table, kind)
else:
    st.caption(_("The average over fresh examples needs a demo model whose card names its task."))

with st.expander(_("What each method computes, and what agreement means"), icon=":material/help:"):
    for m in attr.METHODS:
        st.markdown(say(ui.REGISTRY[m].EXPLANATION, session.model.config))  # in the words of the model's shape
    st.markdown(say(ui.AGREEMENT_TEXT, session.model.config))
ui.downloads(results)
