"""Translations: one `_()` per visible string, from gettext catalogs under i18n/locale.

    from i18n import _, N_
    st.header(_("Attention"))                      # translated now, in the language of this run
    TITLES = {"cross": N_("Cross-attention")}      # only marked (module level); translate where shown: _(TITLES[k])

The language belongs to one script run (a ContextVar: sessions served by different threads never mix);
the app sets it from the URL (`lang=zh`) before anything is drawn. Code outside a run (tests, the CLI,
the lecture pack builder) gets English unless it calls `set_language` or uses `language_scope`.
Catalogs: i18n/locale/<lang>/LC_MESSAGES/messages.po (edited by people, the one file kept in git) and messages.mo
(compiled from it by Babel at set-up); the standard library's gettext reads the .mo at run time
(scripts/i18n.py: extract, update, compile, missing).
The standard library only (Babel only where a .mo must be compiled in memory): model/, viz/ and pages/ may all
import it.

Messages made where no language is known yet (model/ errors and warnings, cached records) keep their
template and values, and are translated where they are shown:

    raise CheckpointError(M_("{name} is missing from {folder}", name=path.name, folder=path.parent))
    ...
    st.error(error_text(err))         # the template translated, then formatted with the values

`M_` returns a `Message`: a str holding the English text (so str(err), comparisons and logs are unchanged)
that also remembers its template and values; `_(message)` translates the template and formats it after.
Values that are Messages themselves are translated too; `join_messages` keeps a list of them.

Rules (tests/test_i18n.py checks them): a literal inside the marker (`_("...").format(...)`, never `_(f"...")`), and
no marked literal inside an f-string's braces (`f"{_('x')}"`): Babel cannot see it there before Python 3.12.
A function that calls _() must not use `_` as a throwaway name. After adding strings: scripts/i18n.py sync,
translate what `scripts/i18n.py missing` lists in the .po, scripts/i18n.py compile.
AppTest calls widgets' format functions in the test's own thread: tests of a Chinese page run inside
`language_scope("zh")` (see tests/test_app_chinese.py).
"""

from __future__ import annotations

import gettext
from collections.abc import Callable, Iterator
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
    """The catalog of one language (English and unknown codes: the identity).

    The .mo is compiled from the .po at set-up (scripts/setup.sh, Babel) and is not kept in git; where it is missing
    or older than the .po (a translation just edited), the .po is compiled in memory instead."""
    if code == DEFAULT or code not in LANGUAGES:
        return gettext.NullTranslations()
    folder = LOCALE_DIR / code / "LC_MESSAGES"
    po, mo = folder / f"{DOMAIN}.po", folder / f"{DOMAIN}.mo"
    if mo.is_file() and (not po.is_file() or mo.stat().st_mtime >= po.stat().st_mtime):
        with open(mo, "rb") as fh:
            return gettext.GNUTranslations(fh)
    if not po.is_file():
        return gettext.NullTranslations()
    return _compiled(po)


def _compiled(po: Path) -> gettext.GNUTranslations:
    """A .po compiled in memory (fuzzy entries left out, as `pybabel compile` does)."""
    import io

    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with open(po, "rb") as fh:
        catalog = read_po(fh)
    buffer = io.BytesIO()
    write_mo(buffer, catalog)
    buffer.seek(0)
    return gettext.GNUTranslations(buffer)


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
    """`message` in the current language (itself where the catalog has no translation).

    A `Message` (from M_, NM_ or join_messages) is translated as its template, then formatted with its values."""
    if isinstance(message, Message):
        return message.translated()
    if not message:  # gettext("") would return the catalog's header
        return message
    return translations(_current.get()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The singular or plural form of a message for count n, in the current language."""
    return translations(_current.get()).ngettext(singular, plural, n)


class Message(str):
    """A message whose language is chosen where it is shown: the English text, plus what translating it needs.

    Build one with M_ (a template and its values), NM_ (singular and plural templates and a count) or
    join_messages; show it with _(message). As a str it is the English text, formatted."""

    template: str = ""
    plural: str | None = None  # the plural template (NM_), chosen by values["n"]
    values: dict = {}
    parts: tuple = ()  # join_messages: the joined messages, and the separator in `template`
    joined: bool = False

    def __reduce__(self):  # cache_data pickles records holding messages: keep what translating needs
        return (_rebuild, (str(self), self.template, self.plural, dict(self.values), tuple(self.parts), self.joined))

    def translated(self, escape: Callable[[str], str] | None = None) -> str:
        """The message in the current language.

        escape: applied to every text value (and plain-text part of a joined message) before it goes into the
        translated template, never to a template: e.g. Markdown escaping, so that a file name or a typed symbol
        quoted in an error box shows as text (pages/safe_text.py). Nested Messages pass it on."""
        if self.joined:
            return self.template.join(
                _value(part if isinstance(part, Message) else _(part), escape) for part in self.parts
            )
        if self.plural is not None:
            text = ngettext(self.template, self.plural, self.values["n"])
        else:
            text = translations(_current.get()).gettext(self.template) if self.template else self.template
        values = {k: _value(v, escape) for k, v in self.values.items()}
        return text.format(**values)


def _value(value: object, escape: Callable[[str], str] | None) -> object:
    """One value of a message, translated (a Message) and escaped (text) as `escape` asks."""
    if isinstance(value, Message):
        return value.translated(escape)
    if escape is not None and isinstance(value, str):
        return escape(value)
    return value


def _rebuild(text: str, template: str, plural, values: dict, parts: tuple, joined: bool) -> Message:
    message = Message(text)
    message.template, message.plural, message.values, message.parts, message.joined = (
        template,
        plural,
        values,
        parts,
        joined,
    )
    return message


def M_(template: str, **values: object) -> Message:
    """Mark `template` for extraction and keep it with its values: str() is the English text, _() translates.

    For messages made outside a page run (model/ errors and warnings): M_("{name} is missing", name=n).
    Values may be Messages (translated with the template) or anything str.format takes."""
    return _rebuild(template.format(**values), template, None, values, (), False)


def NM_(singular: str, plural: str, n: int, **values: object) -> Message:
    """M_ with a count: the singular or plural template is chosen for n (also a value: {n})."""
    values = {"n": n, **values}
    return _rebuild((singular if n == 1 else plural).format(**values), singular, plural, values, (), False)


def join_messages(separator: str, parts) -> Message:
    """Messages (or plain strings) joined by `separator`; each part is translated where the whole is shown."""
    parts = tuple(parts)
    return _rebuild(separator.join(str(p) for p in parts), separator, None, {}, parts, True)


def error_text(err: BaseException) -> str:
    """What an exception says, in the current language: its Message translated, or its text as it is."""
    if len(err.args) == 1 and isinstance(err.args[0], Message):
        return _(err.args[0])
    return str(err)


def message_of(err: BaseException) -> str:
    """The exception's Message (to build a larger Message around it) or its plain text."""
    return err.args[0] if len(err.args) == 1 and isinstance(err.args[0], Message) else str(err)


def N_(message: str) -> str:
    """Mark a string for extraction without translating it (module-level tables); call _() where it is shown."""
    return message
