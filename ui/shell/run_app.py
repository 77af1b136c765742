"""app.py's one call: the language, the navigation over pages/, the shared sidebar, then the chosen page."""

from __future__ import annotations

import streamlit as st

from i18n import _
from ui.serving.threads import end_of_run, start_server_once
from ui.shell.language import choose_language, language_switch
from ui.shell.navigation import THROUGH_APP, page_cost, page_list
from ui.shell.presentation import presentation_mode
from ui.shell.session import RUN_SESSION
from ui.shell.sidebar import sidebar


def run_app(default: str = "attention") -> None:
    """Tests pick the default page."""
    start_server_once()
    try:
        choose_language()  # first: page titles, the navigation and every label below follow it
        st.set_page_config(page_title=_("Transformer attention explorer"))
        page = st.navigation(page_list(default))
        language_switch()
        session = sidebar(page_cost(page, default))  # the input cut to what this page costs
        # the page's CSS, the sidebar's presentation toggle (present=1 in the URL) and the model's badge
        presentation_mode(session)
        tokens = THROUGH_APP.set(True), RUN_SESSION.set(session)  # the run's model goes with the run
        try:
            page.run()
        finally:
            THROUGH_APP.reset(tokens[0])
            RUN_SESSION.reset(tokens[1])
    finally:  # also when the sidebar stops the run (st.stop) or a rerun interrupts it
        end_of_run()  # the server's long-lived objects out of the collector's reach (ui/serving/long_lived.py)
