"""The decoding page's step viewer, shared by every strategy that writes one hypothesis (a `Trace`): the player,
the top candidates of the step, the step's cross- and self-attention rows, the alignment of all steps and the
downloads. `override` adds the "continue with another candidate" box (a forced prefix, in the link as dec_prefix)."""

from __future__ import annotations

import time

import streamlit as st

from i18n import N_, _
from model.analysis.export import trace_json
from tasks.cards import label_smoothing_note
from tasks.gold import gold_alignment
from ui.serving import caches
from ui.shell.figure_download import download_file
from ui.shell.presentation import chart_box, chart_text_px, presenting, show
from ui.shell.safe_text import code, esc, md
from ui.shell.shapes import decoder_side
from ui.shell.url_state import Key, Keys
from ui.views import interventions_ui as heads_ui
from viz import attention_figs
from viz import decoding_figs as figs
from viz.tokens import output_rows, plain_token

# the one row convention (viz/tokens.Rows), said once under the alignment
ROWS_NOTE = N_(
    "A row is the token the decoder **wrote**, on every page; hover over it for the decoder input that wrote it."
)
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


def forced_prefix(vocab_size: int) -> tuple[int, ...]:
    return URL.read("dec_prefix", ok=lambda ids: all(0 <= i < vocab_size for i in ids))


def shown() -> int:
    """How many candidates each step keeps (the "Candidates shown" box)."""
    return URL.read("dec_topk")


def _player(last: int) -> tuple[int, bool]:
    """The Start / Previous / Next / End / Play row and the step slider; (the step shown, playing)."""
    if st.session_state.pop("dec_advance", False) and st.session_state.get("dec_step", 0) < last:
        st.session_state["dec_step"] += 1  # the Play loop's next frame
    step_index = URL.read("dec_step", choices=range(last + 1))

    def go_to(index: int) -> None:
        st.session_state["dec_step"] = max(0, min(last, index))

    cols = st.columns([1, 1, 1, 1, 1, 2])
    buttons = [
        (_("Start"), ":material/first_page:", 0, "dec_first", False),
        (_("Previous"), ":material/chevron_left:", step_index - 1, "dec_prev", step_index == 0),
        (_("Next"), ":material/chevron_right:", step_index + 1, "dec_next", step_index >= last),
        (_("End"), ":material/last_page:", last, "dec_last", False),
    ]
    for col, (label, icon, target, key, disabled) in zip(cols, buttons):
        col.button(label, icon=icon, on_click=go_to, args=(target,), key=key, disabled=disabled, width="stretch")
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
    return step_index, playing


def _override(trace, step, step_index: int, chosen: int | None, prefix: tuple[int, ...]) -> None:
    options = list(range(len(step.top_ids)))
    # One box per step and forced prefix: a box kept across steps showed an earlier step's candidate and probability.
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


def step_view(session, trace, changes, override: bool = False, prefix: tuple[int, ...] = ()) -> tuple[bool, object]:
    """Everything above the alignment for one Trace; (whether the player is playing, the effect of switched-off heads
    or None), for `finish`."""
    last = len(trace.steps) - 1
    step_index, playing = _player(last)
    step = trace.steps[step_index]
    URL.write(dec_step=step_index, dec_prefix=prefix, dec_topk=shown())
    effect = heads_ui.show_effect(session, changes, trace.text) if changes else None
    inputs = trace.decoder_inputs(step_index)
    st.markdown(
        _("**Step {i} of {n}** · {side} so far: {inputs} → writes **{token}** (p = {p})").format(
            side=decoder_side(session.model.config),
            i=step_index + 1,
            n=len(trace.steps),
            inputs=" ".join(code(plain_token(t)) for t in inputs),
            token=code(plain_token(step.token)),
            p=f"{step.prob:.1%}" + (_(", your choice") if step.forced else ""),
        )
    )
    # On a projector the two step charts stand side by side (one screen); beside the sidebar, stacked.
    left, *right = st.columns([1, 1.35, 1.35] if presenting() else [1, 2])
    with left:
        chosen = int(list(step.top_ids).index(step.token_id)) if step.token_id in step.top_ids else None
        title = _("Top {k} next tokens").format(k=len(step.top_tokens))
        show(figs.top_k_bars(step.top_tokens, step.top_probs, chosen, title, chart_text_px()), key="dec_topk_chart")
        if override:
            _override(trace, step, step_index, chosen, prefix)
    width = int(chart_box()[1] * (0.22 if presenting() else 0.62))  # a step chart's plot: its column less labels
    rows = (
        (right[0], step.cross, trace.source_tokens, N_("Cross-attention of the new position over the source"), "dec_cross"),
        (right[-1], step.decoder_self, inputs, N_("Decoder self-attention of the new position"), "dec_self"),
    )  # fmt: skip
    for column, weights, keys, title, key in rows[0 if has_cross(trace) else 1 :]:  # decoder-only: no source
        with column:
            show(figs.step_rows(weights, keys, _(title), width_px=width, tick_px=chart_text_px()), key=key)
    return playing, effect


def has_cross(trace) -> bool:
    """Whether the decoding read a source (a decoder-only model continues a prompt: no cross-attention)."""
    return bool(trace.steps) and trace.steps[0].cross.shape[-1] > 0


CONTEXT_FULL = N_(
    "Stopped at this model's context: the prompt and the continuation fill all {n} positions it reads, so it could "
    "write no more (before </s>)."
)


def context_full(trace, config) -> bool:
    """Whether a decoder-only model's decoding stopped because prompt and continuation reached max_len."""
    return trace.prompt and trace.stop_reason != "eos" and len(trace.source_ids) + len(trace.steps) >= config.max_len


def alignment_view(session, trace, changes) -> None:
    """The alignment of all steps with the source (where there is one), the caption, and the downloads; a notice
    when a decoder-only model's decoding ran out of context."""
    if context_full(trace, session.model.config):
        st.info(_(CONTEXT_FULL).format(n=session.model.config.max_len))
    if has_cross(trace):
        _alignment(session, trace)
    download_file(
        st,
        _("Download this decoding, step by step (.json)"),
        lambda: trace_json(trace, interventions=changes.describe()),
        "decoding.json",
        "dec_dl",
    )


def _alignment(session, trace) -> None:
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
        figs.alignment_heatmap(
            attention_figs.head_average(alignment[layer]),
            output_rows(trace.output_tokens, trace.decoder_inputs(0)[-1]),  # the hover: the input that wrote each
            trace.source_tokens,
            _("Output tokens (rows) against source tokens (columns), layer {layer}").format(layer=layer),
            gold=gold_alignment(session.card, session.check.text, trace.text),
            max_height=max_height,
            max_width=max_width,
            tick_px=chart_text_px(),
        ),
        key="dec_alignment",
    )
    st.caption(
        _("Output: {output} · stopped at {stop}.").format(
            output=esc(trace.text) or "∅", stop="</s>" if trace.stop_reason == "eos" else _("the length limit")
        )
        + " "
        + _(ROWS_NOTE)
    )


def label_smoothing(session) -> None:
    """One line on the ~90% of the top choice at every step of a demo trained with label smoothing."""
    if note := label_smoothing_note(session.card):
        st.caption(md(note))


def finish(session, changes, playing: bool, effect) -> None:
    """The effect of switched-off heads, the capture downloads, and the Play loop's next frame."""
    if effect is not None:
        heads_ui.effect_chart("dec", effect)
    caches.capture_downloads(session, "dec", changes)  # the capture (a second decoding) runs only when downloaded
    if playing:
        time.sleep(0.8)
        st.session_state["dec_advance"] = True
        st.rerun()
    else:
        st.session_state["dec_playing"] = False
