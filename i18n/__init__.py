"""Translations: one `_()` per visible string, from gettext catalogs under i18n/locale.

    from i18n import _, N_
    st.header(_("Attention"))                      # translated now, in the language of this run
    TITLES = {"cross": N_("Cross-attention")}      # only marked (module level); translate where shown: _(TITLES[k])

The language belongs to one script run (a ContextVar: sessions served by different threads never mix);
the app sets it from the URL (`lang=zh`) before anything is drawn. Code outside a run (tests, the CLI,
the lecture pack builder) gets English unless it calls `set_language` or uses `language_scope`.
Catalogs: i18n/locale/<lang>/LC_MESSAGES/messages.po (edited by people) and messages.mo (compiled by
Babel); the standard library's gettext reads the .mo at run time, so Babel is only a development tool.
Pure standard library: model/, viz/ and pages/ may all import it.
"""

from __future__ import annotations

import gettext
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "messages"
LANGUAGES = {"en": "English", "zh": "中文"}  # code -> the name shown in the switch (in its own language)
DEFAULT = "en"

_current: ContextVar[str] = ContextVar("transformer_viz_language", default=DEFAULT)


@cache
def translations(code: str) -> gettext.NullTranslations:
    """The compiled catalog of one language (English and unknown codes: the identity)."""
    if code == DEFAULT:
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, localedir=str(LOCALE_DIR), languages=[code], fallback=True)


def normalize(code: object) -> str:
    """A language code from a URL or a browser ('zh', 'zh-CN', 'zh_Hans_CN', 'EN') -> a key of LANGUAGES."""
    text = str(code or "").strip().lower().replace("_", "-")
    base = text.split("-", 1)[0]
    return base if base in LANGUAGES else DEFAULT


def set_language(code: object) -> str:
    """Make `code` the language of the current run (or thread); returns the normalized code."""
    lang = normalize(code)
    _current.set(lang)
    return lang


def language() -> str:
    """The language of the current run: a key of LANGUAGES."""
    return _current.get()


@contextmanager
def language_scope(code: object) -> Iterator[str]:
    """Temporarily switch language (tests, exports): `with language_scope("zh"): ...`."""
    token = _current.set(normalize(code))
    try:
        yield _current.get()
    finally:
        _current.reset(token)


def _(message: str) -> str:
    """`message` in the current language (itself where the catalog has no translation)."""
    return translations(_current.get()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The singular or plural form of a message for count n, in the current language."""
    return translations(_current.get()).ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Mark a string for extraction without translating it (module-level tables); call _() where it is shown."""
    return message
