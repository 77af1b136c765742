"""Switching heads off on the attention and decoding pages, and head importance.

One control for both pages: an expander showing one attention kind at a time, one row of head buttons (st.pills)
per layer; a ticked head is switched off (its output zeroed before W^O, model/interventions/heads_off.py). Shortcuts switch a
whole layer or kind off or on. The set of heads is kept in one session-state record (every button and click
changes it through a callback; the buttons are drawn from it, so it survives a visit to another page) and in the
URL as `<page>_off=c1.0,e0.3` (kind e/d/c, then layer.head: the URL form of model/interventions/heads_off.py), so
a shared link reproduces it; a value from a link that names heads the model lacks, or is not in that form, is reported
and left out, never a traceback.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
import streamlit as st

from i18n import N_, _, message_of, ngettext
from model import Capture
from model.analysis.budget import BudgetExceeded
from model.analysis.importance import output_log_probs
from model.interventions import KINDS, Interventions
from model.interventions.heads_off import CODES, Head, HeadsOff, layer_counts
from ui.serving import caches
from ui.shell.presentation import chart_box, chart_text_px, show
from ui.shell.safe_text import code, md
from ui.shell.session import Session
from ui.shell.url_state import Key, Keys
from viz import intervention_figs as figs

KIND_LABELS = {"encoder_self": N_("Encoder self"), "decoder_self": N_("Decoder self"), "cross": N_("Cross")}
# Heads switched off per page, dropped with the model (another model's heads mean nothing here). Read and written in
# the intervention kind's own URL form (HeadsOff.from_url / to_url: a link's heads this model lacks are left out).
URL = Keys(
    *(Key(f"{p}_off", encode=lambda heads, p=p: HeadsOff(frozenset(heads)).to_url(p).get(f"{p}_off"), resets="model")
      for p in ("att", "dec", "attr"))
)  # fmt: skip


def _pills_key(prefix: str, kind: str, layer: int) -> str:
    return f"{prefix}_off_{CODES[kind]}{layer}"


def _kept(prefix: str) -> set[Head]:
    """The heads switched off now: the one record of them (every button and click changes it through a callback)."""
    return set(st.session_state.get(f"{prefix}_off", ()))


def _keep(prefix: str, heads: Collection[Head]) -> None:
    st.session_state[f"{prefix}_off"] = frozenset(heads)


def _toggled(prefix: str, kind: str, layer: int) -> None:
    """A layer's head buttons changed: that layer's heads off are the ticked ones."""
    ticked = st.session_state.get(_pills_key(prefix, kind, layer)) or []
    others = {(k, i, h) for k, i, h in _kept(prefix) if (k, i) != (kind, layer)}
    _keep(prefix, others | {(kind, layer, int(h)) for h in ticked})


def _whole(prefix: str, kind: str, layers: Collection[int], n_heads: int, off: bool) -> None:
    """Every head of these layers of one kind off (or on)."""
    chosen = {(kind, i, h) for i in layers for h in range(n_heads)}
    heads = _kept(prefix)
    _keep(prefix, heads | chosen if off else heads - chosen)


def head_switch(prefix: str, session: Session) -> Interventions:
    """The "Switch heads off" control of a page (`prefix`: att, dec); returns what to change (empty: nothing)."""
    layers, n_heads = layer_counts(session.model), session.model.config.n_heads
    key = URL[f"{prefix}_off"]  # a KeyError names a page that did not declare its switch below
    if key.name not in st.session_state:  # the page's first run for this model (another model's heads were dropped)
        change, dropped = HeadsOff.from_url(st.query_params, prefix, session.model)
        heads = set(change.heads) if change else set()
        if dropped:  # a list: the heads this model has are kept, so not the one-value warning of url_state.read
            st.warning(
                _(
                    "The link switches off heads that this model does not have, or names them in a form this page "
                    "does not read; those are left on."
                )
            )
        _keep(prefix, heads)
    # Keyed and stateful: it stays open or closed whatever appears above it, and its buttons cost nothing closed.
    box = st.expander(_("Switch heads off"), key=f"{prefix}_off_open", on_change="rerun", icon=":material/toggle_off:")
    if box.open:
        with box:
            _switches(prefix, layers, n_heads)
    heads = _kept(prefix)
    URL.write(**{key.name: heads})
    return Interventions.make(sorted(heads))


def _switches(prefix: str, layers: dict[str, int], n_heads: int) -> None:
    """Inside the open expander: one kind at a time (a wide row per layer fits 16 heads at 1366 px), with shortcuts."""
    heads = _kept(prefix)
    kinds = [k for k in KINDS if layers.get(k)]  # the kinds this model has (one stack: its self-attention alone)
    counts = " · ".join(
        _("{kind}: {n} off").format(kind=_(KIND_LABELS[k]), n=sum(1 for h in heads if h[0] == k)) for k in kinds
    )
    st.caption(
        _(
            "A ticked head is switched off: its output becomes zero before W^O, for this page only. The page then "
            "shows the changed model's output and attention, and how the output's probability changed."
        )
        + " "
        + counts
    )
    top = st.columns([4, 1.6, 1.6, 1.6], vertical_alignment="center")
    if st.session_state.get(f"{prefix}_off_kind") not in kinds:
        st.session_state[f"{prefix}_off_kind"] = kinds[-1]  # cross-attention where the model has it
    kind = st.session_state[f"{prefix}_off_kind"]
    top[0].segmented_control(
        _("Attention"), kinds, key=f"{prefix}_off_kind", required=True,
        format_func=lambda k: _(KIND_LABELS[k]), label_visibility="collapsed",
    )  # fmt: skip
    every = range(layers[kind])
    top[1].button(_("All of this kind off"), key=f"{prefix}_off_kind_off", on_click=_whole,
                  args=(prefix, kind, every, n_heads, True), width="stretch")  # fmt: skip
    top[2].button(_("All of this kind on"), key=f"{prefix}_off_kind_on", on_click=_whole,
                  args=(prefix, kind, every, n_heads, False), width="stretch")  # fmt: skip
    top[3].button(_("Every head on"), key=f"{prefix}_off_reset", on_click=_keep, args=(prefix, ()), width="stretch")

    def name(h: int) -> str:  # up to 8 heads say "head 3"; 16 heads fit one row of a 1366 px screen as numbers
        return _("head {head}").format(head=h) if n_heads <= 8 else str(h)

    for layer in every:
        key = _pills_key(prefix, kind, layer)
        st.session_state[key] = sorted(h for k, i, h in heads if (k, i) == (kind, layer))  # from the one record
        row = st.columns([1, 10, 1.1, 1.1], vertical_alignment="center")
        row[0].markdown(_("**Layer {layer}**").format(layer=layer))
        row[1].pills(
            _("Heads of layer {layer} switched off").format(layer=layer), list(range(n_heads)),
            selection_mode="multi", key=key, on_change=_toggled, args=(prefix, kind, layer),
            format_func=name, label_visibility="collapsed", wrap=True,
        )  # fmt: skip
        row[2].button(_("all off"), key=f"{key}_all", on_click=_whole, args=(prefix, kind, [layer], n_heads, True),
                      width="stretch")  # fmt: skip
        row[3].button(_("all on"), key=f"{key}_none", on_click=_whole, args=(prefix, kind, [layer], n_heads, False),
                      width="stretch")  # fmt: skip


@dataclass
class Effect:
    """What switching heads off did to this input, for the one-line summary and the per-token chart."""

    changed: Capture  # the changed model's capture, on the plain model's decoder input
    tokens: list[str]  # the output scored: the decoder input shifted by one, then </s>
    plain_log_probs: np.ndarray  # (T,) per output token, plain model
    changed_log_probs: np.ndarray  # (T,) the same tokens, changed model


def show_effect(session: Session, changes: Interventions, new_output: str) -> Effect:
    """The one-line summary above the page's chart: what the changed model writes, and the output's log p change."""
    plain = caches.session_capture(session)
    changed = caches.session_capture(session, changes=changes)
    eos, vocab = session.model.config.eos_id, session.tokenizer.target
    effect = Effect(
        changed, plain.target_tokens[1:] + [vocab.token(eos)], *(output_log_probs(c, eos) for c in (plain, changed))
    )
    delta = float(effect.changed_log_probs.sum() - effect.plain_log_probs.sum())
    old = vocab.detokenize(plain.target_tokens[1:])
    n = len(changes.ablate)
    st.markdown(
        (
            ngettext(
                "With {n} head off the model writes **{new}** (plain model: {old}).",
                "With {n} heads off the model writes **{new}** (plain model: {old}).",
                n,
            )
            if plain.generated
            else ngettext(
                "With {n} head off the model writes **{new}** (your target: {old}).",
                "With {n} heads off the model writes **{new}** (your target: {old}).",
                n,
            )
        ).format(n=n, new=code(new_output or "∅"), old=code(old or "∅"))
        + " "
        + _(
            "Log-probability of the {what}: {delta:+.3f} (p × {factor:.3g}). Attention below: the changed model."
        ).format(what=_("plain output") if plain.generated else _("target"), delta=delta, factor=float(np.exp(delta)))
    )
    return effect


def effect_chart(prefix: str, effect: Effect) -> None:
    """Per output token, the change in log-probability (below the page's chart)."""
    show(
        figs.logprob_change(
            effect.tokens,
            effect.plain_log_probs,
            effect.changed_log_probs,
            width_px=chart_box()[1],
            tick_px=chart_text_px(),
        ),
        key=f"{prefix}_logprob",
    )


def _clicked(prefix: str, layers: dict[str, int], n_heads: int) -> None:
    """A cell of the importance chart was clicked: switch that head off, or back on."""
    event = st.session_state.get(f"{prefix}_importance") or {}
    heads = _kept(prefix)
    for point in (event.get("selection") or {}).get("points") or []:
        try:  # what the browser sent: checked like any other input
            kind, layer, head = point["customdata"][:3]
            layer, head = int(layer), int(head)
        except (KeyError, TypeError, ValueError):
            continue
        if kind in layers and 0 <= layer < layers[kind] and 0 <= head < n_heads:
            heads ^= {(kind, layer, head)}
    _keep(prefix, heads)


def _switch_off(prefix: str, head: Head) -> None:
    _keep(prefix, _kept(prefix) | {head})


def importance_panel(prefix: str, session: Session, changes: Interventions) -> None:
    """Head importance of this input (computed when asked, then kept): a layer x head panel per kind; a click on a
    cell switches that head off or on."""
    layers, n_heads = layer_counts(session.model), session.model.config.n_heads
    total = sum(layers.values()) * n_heads
    box = st.expander(
        _("Which heads matter for this input?"), key=f"{prefix}_importance_open", on_change="rerun",
        icon=":material/insights:",
    )  # fmt: skip
    if not box.open:  # nothing is built or sent while it is closed
        return
    with box:
        st.caption(
            _(
                "For each head, how much less likely the output becomes when that head alone is switched off "
                "(the drop in its log-probability). One pass of the model per head."
            )
        )
        if not caches.has_importance(session):
            slot = st.empty()  # the button, then the progress bar in its place, then nothing
            if not slot.button(_("Measure all {n} heads").format(n=total), key=f"{prefix}_importance_go"):
                return
            bar = slot.progress(0.0, text=_("Switching heads off one at a time…"))
            try:
                result = caches.session_importance(session, lambda done, n: bar.progress(done / n))
            except BudgetExceeded as refusal:  # checked before any pass
                slot.error(md(message_of(refusal)))
                return
            slot.empty()
        else:
            result = caches.session_importance(session)
        show(
            figs.importance_heatmap(result.drop, changes.ablate, max_width=chart_box()[1], tick_px=chart_text_px()),
            key=f"{prefix}_importance",
            on_select=lambda: _clicked(prefix, layers, n_heads),
            selection_mode="points",
        )
        kind, layer, head, drop = result.ranked()[0]
        st.button(
            _("Switch off the head that matters most: {kind}, layer {layer}, head {head} (drop {drop:.3f})").format(
                kind=_(KIND_LABELS[kind]), layer=layer, head=head, drop=drop
            ),
            key=f"{prefix}_importance_top",
            on_click=_switch_off,
            args=(prefix, (kind, layer, head)),
            disabled=(kind, layer, head) in changes.ablate,
        )
        st.caption(_("Click a cell to switch that head off, or on again; a cross marks the heads off now."))
