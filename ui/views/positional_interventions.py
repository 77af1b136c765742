"""A view of the positional page: positions changed at inference (the comparison of the reverse models
that differ only in their positions is in pages/positional_models.py).

Positions at inference: off / shuffled / shifted by k, in the URL as pe_pos, pe_shift, pe_seed. The page shows the
output with and without the change, the cross-attention of both, and a verdict: for a shipped demo with a task,
exact match on 200 fresh examples with and without the change.
"""

from __future__ import annotations

import streamlit as st

from i18n import N_, _, message_of
from model.analysis.budget import BudgetExceeded
from model.interventions import INTERVENTION_KINDS, NONE, Interventions
from model.interventions.effects import max_shift
from tasks.intervened import UnknownTraining
from ui.serving import caches
from ui.serving.workers import WorkerStopped
from ui.shell.navigation import view_menu
from ui.shell.presentation import chart_box, chart_text_px, show
from ui.shell.safe_text import code, md
from ui.shell.session import Session
from ui.shell.shapes import WORDS, say
from ui.shell.url_state import Key, Keys, write_url
from viz import attention_figs
from viz.tokens import output_rows

# the intervention kinds of the "positions" slot (model/interventions/), their titles and sentences theirs
KINDS = {k.positional: k for k in INTERVENTION_KINDS.values() if k.slot == "positions"}
CHANGES = {"none": N_("As trained"), **{name: k.title for name, k in KINDS.items()}}
PREFIX = "pe"  # the kinds' own URL forms with this prefix: pe_pos=shifted&pe_shift=3 (Change.to_url / url_keys)
URL = Keys(
    Key("pe_pos", next(iter(KINDS)), choices=tuple(CHANGES)),
    Key("pe_shift", cast=int),  # default and choices: the room this input leaves below max_len
    Key("pe_seed", 0, choices=range(1000), cast=int),
)
FRESH = 200  # fresh examples behind a verdict
SHOWN_POSITIONS = 40  # rows of the positional tables compared (the reverse demos read at most 25 tokens)


DEFAULT_SHIFT = 5  # k a shift starts at, when the input leaves room for it


def default_changes() -> list[Interventions]:
    """Each kind's change as the view first shows it on a demo's examples (shift k = DEFAULT_SHIFT, shuffle 0): the
    verdicts scripts/precompute.py ships, so that no visitor waits for them."""
    return [Interventions.make(positional=name, shift=DEFAULT_SHIFT if kind.setting == "shift" else 1, seed=0)
            for name, kind in KINDS.items()]  # fmt: skip


def _changes_from_controls(session: Session) -> Interventions:
    """The off / shuffled / shifted controls, kept valid and in the URL."""
    kind = URL.read("pe_pos")
    view_menu(CHANGES, "pe_pos", N_("Positions at inference"))
    setting = KINDS[kind].setting if kind in KINDS else None  # the kind's one setting, if any: its control below
    shift = seed = None
    if setting == "shift":
        room = min(100, max_shift(session.model, session.tokenizer, session.check.text))
        if room < 1:
            st.warning(_("This input leaves no room to shift: its positions already reach the model's max_len."))
            kind = None
        else:
            shift = URL.read("pe_shift", min(DEFAULT_SHIFT, room), range(1, room + 1))
            if room > 1:
                st.slider(_("k: every position p reads the encoding of p + k"), 1, room, key="pe_shift")
    if setting == "seed":
        seed = URL.read("pe_seed")
        st.number_input(_("Shuffle number (each gives another order)"), 0, 999, key="pe_seed")
    changes = Interventions.make(positional=kind, shift=shift or 1, seed=seed or 0) if kind in KINDS else NONE
    written = {key: None for key in URL.keys} | {"pe_pos": st.session_state["pe_pos"]}
    for change in changes.changes:  # the kind writes its own link form (its setting too)
        written |= change.to_url(PREFIX)
    write_url(**written)
    return changes


def _last_layer(trace, title: str, width: int):
    """The last decoder layer's attention of each written token, head average: output tokens down; across, the
    source (cross-attention) or, for a decoder-only model, the prompt and the tokens written before (its
    self-attention: it has no other). None when nothing was written."""
    if not trace.steps:
        return None
    if trace.prompt:
        rows, keys = trace.decoder_self_matrix(), trace.decoder_inputs(len(trace.steps) - 1)
        key_label = WORDS["decoder-only"].sequence
    else:
        rows, keys, key_label = trace.cross_alignment(), trace.source_tokens, WORDS["encoder-decoder"].reads
    return attention_figs.attention_heatmap(
        attention_figs.head_average(rows[-1]), output_rows(trace.output_tokens, trace.decoder_inputs(0)[-1]),
        keys, title, key_label=key_label, max_height=chart_box()[0] - 60, max_width=width, tick_px=chart_text_px(),
        snug=True,
    )  # fmt: skip


# the two panels' titles, said with the model's attention from what it writes to what it reads (ui.shell.shapes):
# cross-attention where the model has it, else the decoder's self-attention
PANEL_TITLES = (N_("As trained: {attention}, last layer"), N_("Changed: {attention}, last layer"))


def inference_view(session: Session | None) -> Interventions:
    """Positions changed at inference: the output, the attention and a one-line verdict; returns the change."""
    if session is None:
        st.info(_("Load a model in the sidebar to change its positions."))
        return NONE
    if not session.ok:  # what is wrong with the input is named below the view
        return NONE
    changes = _changes_from_controls(session)
    args = (session.key, session.check.text, (), 5, session.model, session.tokenizer)
    plain = caches.cached_trace(*args)
    if not changes:
        st.markdown(_("As trained, the model writes **{out}**.").format(out=code(plain.text or "∅")))
        return changes
    changed = caches.cached_trace(*args, changes)
    what = _(KINDS[changes.positional].what).format(k=changes.shift)
    st.markdown(
        _("As trained the model writes **{plain}**; {what} it writes **{changed}**.").format(
            plain=code(plain.text or "∅"), what=what, changed=code(changed.text or "∅")
        )
    )
    _verdict(session, changes, what)
    width = chart_box()[1] // 2
    left, right = st.columns(2)
    config = session.model.config
    for column, trace, title, key in (
        (left, plain, say(PANEL_TITLES[0], config), "pe_cross_plain"),
        (right, changed, say(PANEL_TITLES[1], config), "pe_cross_changed"),
    ):
        fig = _last_layer(trace, title, width)
        if fig is None:
            column.info(_("Nothing written: no attention to show."))
        else:
            show(fig, key=key, where=column, top_px=380)  # top_px: below the verdict, measured in presentation mode
    return changes


def _verdict(session: Session, changes: Interventions, what: str) -> None:
    """One line: exact match on fresh examples with and without the change (shipped demos with a task only)."""
    if not (session.key.startswith("demo:") and session.card.get("task")):
        st.caption(_("Not a shipped demo with a task: only this input's output is compared."))
        return
    try:
        with st.spinner(_("Scoring {n} fresh examples…").format(n=FRESH)):
            before, after = (caches.demo_exact_match(session.key, session.model, session.tokenizer, session.card, c, FRESH)
                             for c in (NONE, changes))  # fmt: skip
    except UnknownTraining:
        st.caption(_("This demo's card does not say how it was trained: no fresh examples to score."))
        return
    except (WorkerStopped, BudgetExceeded) as stopped:  # the deadline, the memory limit, or refused up front
        st.caption(md(message_of(stopped)))
        return
    except ValueError:  # the shift runs past max_len for the longer fresh examples
        st.caption(_("Shifted by {k}, the longer fresh examples run past the model's max_len: no verdict for this k.")
                   .format(k=changes.shift))  # fmt: skip
        return
    line = _("Verdict: on {n} fresh examples the model is exactly right {before:.1%} of the time as trained, "
             "{after:.1%} {what}.").format(n=FRESH, before=before.exact_match, after=after.exact_match, what=what)  # fmt: skip
    if after.failure is not None:
        typed, target, output = after.failure
        line += " " + _("For example `{input}` → `{output}` (should be `{target}`).").format(
            input=typed, output=output or "∅", target=target
        )
    st.markdown(line)
