"""The shared sidebar: the model picker, the input and target boxes, their checks; the Session a page reads.

Every widget's value also lives in the URL (model=, text=, target=), so a link reproduces the view.
"""

from __future__ import annotations

import weakref

import streamlit as st

from i18n import M_, N_, _
from model.analysis.budget import MAX_TEXT_CHARS, WorkBudget
from model.analysis.budget_input import apply_budget, source_length
from model.checkpoints.demos import list_demos
from model.text.inputs import check_text, text_room
from model.text.trained_range import trained_range_warning
from tasks.cards import card_description, format_warning, grammar_warning
from ui.shell.model_picker import pick_model
from ui.shell.session import Session
from ui.shell.shapes import say, words
from ui.shell.url_state import Key, Keys, follow, write_url

URL = Keys(
    Key("text"),  # default: the model's first example
    Key("target", ""),
)


def _use_example() -> None:
    example = st.session_state.get("example_pick")
    if example:
        st.session_state["text"] = example
        st.session_state["example_pick"] = None


INPUT_LABEL = N_("Input text ({reads})")
TARGET_HELP = N_(
    "Leave empty to show the model's own greedy output; type a target to see the attention with that text as its "
    "{writes} (teacher forcing)."
)
INPUT_HELP = {
    "encoder-decoder": N_("What the encoder reads. The decoder then produces its output token by token."),
    "decoder-only": N_("The prompt the model reads; it then continues it token by token, in one sequence."),
    "encoder-only": N_("The text the encoder reads: every token attends to every other, in both directions."),
}


def sidebar(cost=None) -> Session | None:
    """Render the shared sidebar; None when no model could be loaded (the reason is shown).

    cost: the page's cost function (ui.shell.navigation.COSTS; None: model.analysis.budget.page_bytes), by which the
    input is cut to what the work budget allows before the page runs."""
    st.sidebar.header(_("Model and input"))
    picked = pick_model()
    if picked is None:
        if not list_demos():
            st.sidebar.warning(
                _("No demo models found in checkpoints/. Train one: {command}").format(
                    command="python -m model.train --task reverse --out checkpoints/reverse"
                )
            )
        return None
    key, label, model, tok, card = picked
    examples = list(card.get("examples", []))
    base_key = key.split("|", 1)[0]
    previous = st.session_state.get("_text_model")
    if previous is not None and previous != base_key and examples:
        # Another model: start from its own first example rather than read the old text with a vocabulary that
        # does not fit. The old text is not lost: it stays in the browser's history with the old URL.
        st.session_state["text"], st.session_state["target"] = examples[0], ""
    st.session_state["_text_model"] = base_key
    URL.read("text", default=examples[0] if examples else "")
    URL.read("target")
    long_link = _bound_typed_text()
    st.sidebar.text_area(
        _(INPUT_LABEL).format(reads=_(words(model.config).reads)),  # source, prompt or text: the model's own word
        key="text",
        height=90,
        max_chars=MAX_TEXT_CHARS,
        help=_(INPUT_HELP[model.config.shape]),
    )
    if examples:
        st.sidebar.selectbox(
            _("Try an example"),
            [None, *examples],
            key="example_pick",
            on_change=_use_example,
            format_func=lambda e: "—" if e is None else e,
        )
    st.sidebar.text_input(
        _("Target (optional)"),
        key="target",
        max_chars=MAX_TEXT_CHARS,
        help=say(TARGET_HELP, model.config),
    )
    if description := card_description(card):
        st.sidebar.caption(_(description))
    text, target = st.session_state["text"], st.session_state["target"]
    room = text_room(model.config)
    budget = WorkBudget.from_environment()  # attention grows with heads x length^2: cut before any work
    # counted only as far as the page may read (the budget's room): a visitor's long text is not tokenized in full
    check = check_text(text, tok.source, room, count_to=budget.source_room(model.config, cost))
    check.warnings[:0] = long_link
    apply_budget(check, tok.source, model.config, budget, cost=cost)
    target_check = check_text(target, tok.target, room, what="target") if target.strip() else None
    source_tokens = source_length(tok.source, model.config, check.text)
    if target_check is not None:
        apply_budget(target_check, tok.target, model.config, budget, "target", source_tokens, cost)
    if not check.errors and (outside := trained_range_warning(card, check.text, tok.source, check.complete)):
        check.warnings.append(outside)
    if not check.errors and (guess := grammar_warning(card, check.text)):
        check.warnings.append(guess)
    if not check.errors and (unfinished := format_warning(card, check.text)):
        check.warnings.append(unfinished)
    write_url(
        model=None if base_key.startswith("upload:") else base_key,
        text=text,
        target=target or None,
        model_heads=st.session_state.get("model_heads") if "|heads=" in key else None,
    )
    follow(key, check.text)  # keys declared resets="model" / "input" start again when these changed
    typed_target = target_check.text if target_check is not None else None  # cleaned and cut as the model reads it
    return Session(
        key,
        label,
        weakref.ref(model),
        weakref.ref(tok),
        card,
        text,
        check,
        typed_target or None,
        target_check,
        examples,
    )


def _bound_typed_text() -> list:
    """Both boxes hold at most MAX_TEXT_CHARS characters (the browser stops typing there; a link may carry more):
    a longer text from a link is cut here, before anything reads it, with a warning to show above the result."""
    notes = []
    for key, what in (("text", N_("input")), ("target", N_("target"))):
        value = st.session_state.get(key) or ""
        if len(value) > MAX_TEXT_CHARS:
            st.session_state[key] = value[:MAX_TEXT_CHARS]
            notes.append(
                M_(
                    "The link's {what} has {n} characters; this app reads at most {max}: the rest was left out.",
                    what=M_(what),
                    n=len(value),
                    max=MAX_TEXT_CHARS,
                )
            )
    return notes
