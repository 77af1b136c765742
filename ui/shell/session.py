"""What a page gets from the sidebar: the Session (model, tokenizer, input and its checks) of this run."""

from __future__ import annotations

import contextvars
import weakref
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from i18n import _
from model.text.inputs import InputCheck
from ui.shell.navigation import THROUGH_APP, rerun_through_app
from ui.shell.safe_text import md


@dataclass
class Session:
    """What the sidebar settled on in this run.

    The model and tokenizer are held weakly: the demos' cache and ui/serving/held_models hold them. A page's globals
    (`session = require_session()`) outlive its run whenever a widget keeps a function of the page (a format_func, a
    callback) in the session's state, which Streamlit keeps for 2 minutes after a tab closes; they must not keep a
    visitor's model alive once ui/serving/held_models released it."""

    key: str  # identifies the loaded model in caches and URLs: demo:NAME, path:FOLDER, upload:SHA
    label: str
    model_ref: weakref.ref
    tokenizer_ref: weakref.ref
    card: dict
    text: str  # exactly what the user typed
    check: InputCheck
    target: str | None  # a teacher-forcing target, or None for the model's own output
    target_check: InputCheck | None
    examples: list[str] = field(default_factory=list)

    @property
    def model(self) -> Any:
        return self.model_ref()

    @property
    def tokenizer(self) -> Any:
        return self.tokenizer_ref()

    @property
    def ok(self) -> bool:
        return not self.check.errors and not (self.target_check and self.target_check.errors)


def show_input_messages(session: Session) -> bool:
    """Errors and warnings about the input, on the page; False when the page has nothing to show."""
    for check in (session.check, session.target_check):
        if check is None:
            continue
        for message in check.errors:
            st.error(md(message))
        for message in check.warnings:
            st.warning(md(message))
    return session.ok


# The sidebar's Session of the run under way (ui/shell/run_app.py sets it around the page): a context variable, not
# st.session_state, so that the model goes with the run. A session kept for reconnecting (Streamlit keeps a closed
# tab's state for 2 minutes) would otherwise hold a visitor's model after its websocket closed (ui/serving/held_models.py);
# and a run being stopped cannot even touch st.session_state to let go of it (StopException).
RUN_SESSION: contextvars.ContextVar[Session | None] = contextvars.ContextVar("run_session", default=None)


def current() -> Session | None:
    """The sidebar's session of this run (None: no model); a page file run alone is run again through app.py."""
    if not THROUGH_APP.get():
        rerun_through_app()
    return RUN_SESSION.get()


def require_session(valid_input: bool = True) -> Session:
    """The sidebar's session; stops the page with a message when there is no model (or, if asked, no valid input)."""
    session = current()
    if session is None:
        st.info(_("Choose a model in the sidebar to begin."))
        st.stop()
    if valid_input and not show_input_messages(session):
        st.stop()
    return session
