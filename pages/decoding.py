"""Step-by-step greedy decoding: what the decoder sees and looks at for every token it writes."""

import time

import streamlit as st

from i18n import N_, _
from model.analysis.export import trace_json
from model.interventions import NONE
from tasks.cards import label_smoothing_note
from tasks.gold import gold_alignment
from ui import caches
from ui import decoding_strategy as strategies
from ui import interventions_ui as heads_ui
from ui.decoding_beam import beam_view
from ui.explain import explain_row
from ui.presentation import chart_box, chart_text_px, presenting, show
from ui.safe_text import code, esc, md
from ui.session import require_session
from ui.url_state import Key, Keys
from viz import attention_figs
from viz import decoding_figs as figs
from viz.tokens import plain_token

URL = Keys(
    # Forced choices (the user picked another candidate) and the step shown belong to one model and input.
    Key(
        "dec_prefix",
        (),
        cast=lambda raw: tuple(int(x) for x in raw.split(",") if x.strip()),
        encode=lambda ids: ",".join(map(str, ids)) or None,
        resets="input",
    ),  # fmt: skip
    Key("dec_step", 0, cast=int, resets="input"),  # choices: the steps of the decoding
    Key("dec_topk", 5, choices=(3, 5, 10), cast=int),
    Key("dec_layer", cast=int),  # default and choices: the model's layers
)
st.title(_("Step-by-step decoding"))
session = require_session()
strategy = strategies.choose(session.model.config.tgt_vocab_size)  # greedy, beam search or sampling
if strategy.name == "beam":
    beam_view(session, strategy)
    st.stop()


vocab_size = session.model.config.tgt_vocab_size
prefix = URL.read("dec_prefix", ok=lambda ids: all(0 <= i < vocab_size for i in ids))
top_k = URL.read("dec_topk")

# Heads switched off (issue 14), in the URL as dec_off: greedy decoding only until the strategies take them too.
changes = heads_ui.head_switch("dec", session) if strategy.name == "greedy" else NONE
trace = caches.cached_trace(session.key, session.check.text, prefix, top_k, session.model, session.tokenizer, changes)
if strategy.name == "sample":
    trace = strategies.sampled_trace(session, strategy, top_k)
last = len(trace.steps) - 1
if st.session_state.pop("dec_advance", False) and st.session_state.get("dec_step", 0) < last:
    st.session_state["dec_step"] += 1  # the Play loop's next frame
step_index = URL.read("dec_step", choices=range(last + 1))


def go_to(index: int) -> None:
    st.session_state["dec_step"] = max(0, min(last, index))


cols = st.columns([1, 1, 1, 1, 1, 2])
cols[0].button(_("Start"), icon=":material/first_page:", on_click=go_to, args=(0,), key="dec_first", width="stretch")
cols[1].button(
    _("Previous"),
    icon=":material/chevron_left:",
    on_click=go_to,
    args=(step_index - 1,),
    key="dec_prev",
    disabled=step_index == 0,
    width="stretch",
)
cols[2].button(
    _("Next"),
    icon=":material/chevron_right:",
    on_click=go_to,
    args=(step_index + 1,),
    key="dec_next",
    disabled=step_index >= last,
    width="stretch",
)
cols[3].button(_("End"), icon=":material/last_page:", on_click=go_to, args=(last,), key="dec_last", width="stretch")
playing = st.session_state.setdefault("dec_playing", False) and step_index < last
cols[4].button(
    _("Pause") if playing else _("Play"),
    icon=":material/pause:" if playing else ":material/play_arrow:",
    key="dec_play_button",
    width="stretch",
    disabled=step_index >= last,
    on_click=lambda: st.session_state.update(dec_playing=not playing),
)
cols[5].selectbox(_("Candidates shown"), [3, 5, 10], key="dec_topk")
if last > 0:
    st.select_slider(_("Step"), list(range(last + 1)), key="dec_step", format_func=lambda i: str(i + 1))
step = trace.steps[step_index]
URL.write(dec_step=step_index, dec_prefix=prefix, dec_topk=top_k)

if changes:
    effect = heads_ui.show_effect(session, changes, trace.text)
inputs = trace.decoder_inputs(step_index)
st.markdown(
    _("**Step {i} of {n}** · decoder input so far: {inputs} → writes **{token}** (p = {p})").format(
        i=step_index + 1,
        n=len(trace.steps),
        inputs=" ".join(code(plain_token(t)) for t in inputs),
        token=code(plain_token(step.token)),
        p=f"{step.prob:.1%}" + (_(", your choice") if step.forced else ""),
    )
)
# On a projector the two step charts stand side by side (one screen); beside the sidebar, stacked.
shares = [1, 1.35, 1.35] if presenting() else [1, 2]
left, *right = st.columns(shares)
with left:
    chosen = int(list(step.top_ids).index(step.token_id)) if step.token_id in step.top_ids else None
    show(
        figs.top_k_bars(
            step.top_tokens,
            step.top_probs,
            chosen,
            _("Top {k} next tokens").format(k=len(step.top_tokens)),
            chart_text_px(),
        ),
        key="dec_topk_chart",
    )
    options = list(range(len(step.top_ids)))
    # One box per step and forced prefix: a box kept across steps showed an earlier step's candidate and probability.
    if strategy.name == "greedy":  # a forced choice continues greedily
        pick = st.selectbox(
            _("Continue with another candidate"),
            options,
            index=chosen or 0,  # the candidate this step took: after an override, the one chosen
            key=f"dec_pick_{step_index}_{len(prefix)}",
            format_func=lambda i: f"{plain_token(step.top_tokens[i])}  ({step.top_probs[i]:.1%})",
        )
        if st.button(_("Decode from this choice"), key="dec_apply"):
            st.session_state["dec_prefix"] = tuple(trace.output_ids[:step_index]) + (int(step.top_ids[pick]),)
            st.rerun()
        if prefix and st.button(_("Back to pure greedy decoding"), key="dec_reset"):
            st.session_state["dec_prefix"] = ()
            st.rerun()
# The plot of a step chart: its column less row labels and colour bar.
width = int(chart_box()[1] * (0.22 if presenting() else 0.62))
with right[0]:
    show(
        figs.step_rows(
            step.cross,
            trace.source_tokens,
            _("Cross-attention of the new position over the source"),
            width_px=width,
            tick_px=chart_text_px(),
        ),
        key="dec_cross",
    )
with right[-1]:
    show(
        figs.step_rows(
            step.decoder_self,
            inputs,
            _("Decoder self-attention of the new position"),
            width_px=width,
            tick_px=chart_text_px(),
        ),
        key="dec_self",
    )
if note := label_smoothing_note(session.card):  # the ~90% at every step of a demo (issue 34)
    st.caption(md(note))
explain_row(*(["greedy"] if strategy.name == "greedy" else []), "specials")  # sampling explains itself below
if strategy.name == "sample":
    strategies.sampling_view(trace, strategy)

st.subheader(_("Alignment of all steps"))
alignment = trace.cross_alignment()
n_layers = alignment.shape[0]
layer = URL.read("dec_layer", n_layers - 1, range(n_layers))
st.selectbox(
    _("Layer"),
    list(range(n_layers)),
    key="dec_layer",
    format_func=lambda i: _("layer {i} (average of heads)").format(i=i),
)
URL.write(dec_layer=layer)
max_height, max_width = chart_box()
show(
    attention_figs.attention_heatmap(
        attention_figs.head_average(alignment[layer]),
        trace.output_tokens,
        trace.source_tokens,
        _("Output tokens (rows) against source tokens (columns), layer {layer}").format(layer=layer),
        query_label=N_("output"),
        key_label=N_("source"),
        gold=gold_alignment(session.card, session.check.text, trace.text),
        max_height=max_height,
        max_width=max_width,
        tick_px=chart_text_px(),
        snug=True,
    ),
    key="dec_alignment",
)
st.caption(
    _("Output: {output} · stopped at {stop}.").format(
        output=esc(trace.text) or "∅", stop="</s>" if trace.stop_reason == "eos" else _("the length limit")
    )
    + " "
    + _(
        "Rows here are the tokens the decoder **wrote** (outputs). On the Attention page the decoder's rows are its "
        "**inputs**, `<s>` then these tokens: the row that wrote a token is the one before it there."
    )
)
st.download_button(
    _("Download this decoding, step by step (.json)"),
    lambda: trace_json(trace, interventions=changes.describe()),
    file_name="decoding.json",
    mime="application/json",
    key="dec_dl",
    on_click="ignore",
)
if changes:
    heads_ui.effect_chart("dec", effect)
caches.capture_downloads(session, "dec", changes)  # the capture (a second decoding) runs only when one is downloaded

if playing:
    time.sleep(0.8)
    st.session_state["dec_advance"] = True
    st.rerun()
else:
    st.session_state["dec_playing"] = False
