"""The interface language of a run: from the link (lang=zh), else from the browser, and the sidebar's switch.

run_app (ui/shell/run_app.py) calls choose_language() first, before the navigation and every label are drawn,
and language_switch() at the top of the sidebar. The choice lives in the URL like every other selection.
"""

from __future__ import annotations

import streamlit as st

from i18n import LANGUAGES, normalize, set_language
from ui.shell.url_state import Key, Keys

URL = Keys(Key("lang", choices=tuple(LANGUAGES), cast=normalize))  # default: the browser's language
LANGUAGE_LABEL = "Language · 语言"  # the switch's label: in both languages, so anyone finds it


def browser_language() -> str:
    """The browser's language as a key of LANGUAGES: st.context.locale (navigator.language), else the first
    language of the Accept-Language header; English when neither is known or neither is offered."""
    try:
        locale = st.context.locale
    except Exception:  # no browser (a bare script run)
        locale = None
    if not locale:
        try:
            header = st.context.headers.get("Accept-Language") or ""
        except Exception:
            header = ""
        locale = header.split(",", 1)[0].split(";", 1)[0]
    return normalize(locale)


def choose_language() -> str:
    """Set this run's language before anything is drawn: the switch's value, first taken from the URL (lang=zh)
    and otherwise from the browser's language. Returns the language code."""
    if "_lang_default" not in st.session_state:
        st.session_state["_lang_default"] = browser_language()
    return set_language(URL.read("lang", st.session_state["_lang_default"]))


def language_switch() -> None:
    """English / 中文 in the sidebar; kept in the URL as lang=zh (lang=en only where the browser would pick Chinese)."""
    st.sidebar.radio(
        LANGUAGE_LABEL,
        list(LANGUAGES),
        key="lang",
        format_func=LANGUAGES.get,
        horizontal=True,
        label_visibility="collapsed",
    )
    lang = st.session_state["lang"]
    URL.write(lang=None if lang == st.session_state["_lang_default"] == "en" else lang)
