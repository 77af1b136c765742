"""Every selection of every page lives in the URL (st.query_params), so a link reproduces the view.

A page declares its URL keys once, at its top, with their type, default and allowed values:

    URL = Keys(
        Key("att_kind", "cross", choices=tuple(KINDS)),
        Key("att_layer", cast=int, resets="model"),  # choices and default given where the model is known
    )
    layer = URL.read("att_layer", default=n_layers - 1, choices=range(n_layers))
    ...
    URL.write(att_kind=kind, att_layer=layer)

Reading, writing, checking and resetting all come from the declaration:
- read() takes the value from the link once per session (then the widget's session state keeps it); a link's value
  that does not parse or is not allowed is replaced by the default with one warning, the same on every page
  (never echoing the value: a link could hold anything); a kept value that stops being allowed (another model
  has fewer layers) quietly becomes the default.
- write() puts values in the address bar with each key's encoding (None leaves the key out).
- Keys declared resets="model" (or "input": the model or the text) are dropped from the session and the URL when
  the sidebar's model (or input) changes (`follow`, called by the sidebar): a head, a layer count or a forced
  token of one model means nothing for another.

Streamlit 1.67's own binding (a widget's `bind="query-params"`) was checked and is not used: it writes a select
box's *shown* label into the URL (translated labels would change links with the language), lists as repeated keys
(links today carry "3,7,12"), drops values equal to the default, and removes a bad value without a word.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import streamlit as st

from i18n import _

_UNSET: Any = object()
_REGISTRY: dict[str, Key] = {}  # every declared key of this process, for `follow`
_CONTEXT = "_url_context"  # session state: the (model, input) the kept values belong to


def intish(raw: str) -> int | str:
    """ "average" or an int: the head choice of several pages."""
    return raw if raw == "average" else int(raw)


def flag(raw: str) -> bool:
    if raw in ("1", "true", "True"):
        return True
    if raw in ("0", "false", "False"):
        return False
    raise ValueError(raw)


def finite(lo: float, hi: float) -> Callable[[Any], bool]:
    """A bound: a finite number within [lo, hi]."""
    return lambda v: isinstance(v, (int, float)) and math.isfinite(v) and lo <= v <= hi


def between(lo: int, hi: int) -> Callable[[Any], bool]:
    return lambda v: lo <= v <= hi


def rounded(decimals: int) -> Callable[[str], float]:
    """float(text) rounded to `decimals` (nan and inf stay, for `finite` to refuse), so the box, the link and the
    computation hold one value."""
    return lambda raw: round(float(raw), decimals) if math.isfinite(float(raw)) else float(raw)


def _ints_text(values: Iterable[int]) -> str:
    return ",".join(map(str, values)) or "none"


@dataclass(frozen=True)
class Key:
    """One URL key of a page: how it is read, checked and written."""

    name: str  # the URL key, also the widget's session-state key
    default: Any = None  # used when the link has no (valid) value; read() may give one that depends on the model
    choices: Sequence[Any] | None = None  # allowed values (None: whatever `cast` accepts and `ok` allows)
    cast: Callable[[str], Any] = str  # the link's text -> a value; ValueError/TypeError: not valid
    ok: Callable[[Any], bool] | None = None  # a bound the cast value must meet (e.g. finite(0, 2))
    encode: Callable[[Any], str | None] = str  # a value -> the link's text (None: left out of the link)
    resets: str | None = None  # "model" or "input": dropped when the sidebar's model (or input) changes
    what: str | None = None  # how the warning names it (marked with N_); default: the key as written in the link
    many: bool = False  # a list of `cast` values, written "3,7,12" ("none": empty); values outside choices dropped

    def allowed(self, value: Any, choices: Sequence[Any] | None) -> bool:
        """Whether a single value passes `ok` and `choices`. A list's values outside `choices` are dropped one by
        one instead (a link's "3,7,999" keeps 3 and 7), so for a list only `ok` decides."""
        if self.many:
            return self.ok is None or all(self.ok(v) for v in value)
        return (self.ok is None or self.ok(value)) and (choices is None or value in choices)

    def parse(self, raw: str) -> Any:
        if not self.many:
            return self.cast(raw)
        return [] if raw == "none" else list(dict.fromkeys(self.cast(v) for v in raw.split(",") if v.strip()))

    def text(self, value: Any) -> str | None:
        if value is None:
            return None
        return _ints_text(value) if self.many and self.encode is str else self.encode(value)


def invalid_warning(key: Key) -> str:
    """The one message for a link's value that is not valid here (translated; the value itself never shown)."""
    what = _(key.what) if key.what else f"“{key.name}”"
    return _("The link's value for {what} is not valid here; the default is used instead.").format(what=what)


def read(key: Key, default: Any = _UNSET, choices: Sequence[Any] | None = _UNSET, ok: Any = _UNSET) -> Any:
    """The value of `key` now: from the link on the first read of the session, then from session state (the widget
    with the same key changes it). A bad link value warns (invalid_warning) and gives the default. default, choices
    and ok replace the declared ones where they depend on the model or the input."""
    if ok is not _UNSET:
        key = replace(key, ok=ok)
    default = key.default if default is _UNSET else default
    choices = key.choices if choices is _UNSET else choices
    choices = list(choices) if choices is not None else None
    fallback = default if choices is None or key.many or default in choices else choices[0]
    name = key.name
    if name not in st.session_state:
        value = fallback
        raw = st.query_params.get(name)
        if raw is not None:
            try:
                parsed = key.parse(raw)
                valid = key.allowed(parsed, choices)
            except (TypeError, ValueError, OverflowError):
                valid = False
            if valid:
                value = parsed
            else:
                st.warning(invalid_warning(key))
        st.session_state[name] = list(value) if key.many else value
    value = st.session_state[name]
    if key.many:
        kept = [v for v in dict.fromkeys(value) if choices is None or v in choices]
        if kept != value:
            st.session_state[name] = value = kept
    elif not key.allowed(value, choices):  # kept from another model or input: quietly the default
        st.session_state[name] = value = fallback
    return value


def write_url(**values: Any) -> None:
    """Put these values in the address bar as they are (str); None or "" removes a key."""
    for k, v in values.items():
        if v is None or v == "":
            st.query_params.pop(k, None)
        elif st.query_params.get(k) != str(v):
            st.query_params[k] = str(v)


class Keys:
    """One page's (or one control's) declared URL keys."""

    def __init__(self, *keys: Key) -> None:
        self.keys = {k.name: k for k in keys}
        _REGISTRY.update(self.keys)

    def __getitem__(self, name: str) -> Key:
        return self.keys[name]

    def read(self, name: str, default: Any = _UNSET, choices: Sequence[Any] | None = _UNSET, ok: Any = _UNSET) -> Any:
        return read(self.keys[name], default, choices, ok)

    def write(self, **values: Any) -> None:
        """Each value in the link with its key's encoding (None: left out)."""
        write_url(**{name: self.keys[name].text(v) for name, v in values.items()})


KEPT = ("model", "text", "lang", "present")  # what a link to another page carries over from this one


def page_link(page: str, keep: Sequence[str] = KEPT, **params: Any) -> str:
    """A relative link to another page of the app (a url_path of ui/shell/navigation.PAGES) that keeps this view's `keep`
    keys (model, input, language, presentation mode) and sets `params` (None leaves a key out), URL-encoded."""
    from urllib.parse import urlencode

    from ui.shell.navigation import PAGES

    if page not in PAGES:
        raise ValueError(f"no page {page!r}")
    kept = {k: v for k, v in st.query_params.to_dict().items() if k in keep}
    return f"{page}?" + urlencode({**kept, **{k: v for k, v in params.items() if v is not None}})


def follow(model: str, text: str) -> None:
    """The sidebar's model and input of this run: keys declared resets="model" / "input" are dropped (session
    state and URL) when theirs changed since the last run. The first run keeps everything (it may come from a
    link)."""
    now = {"model": model, "input": (model, text)}
    before = st.session_state.get(_CONTEXT)
    st.session_state[_CONTEXT] = now
    if before is None:
        return
    for key in list(_REGISTRY.values()):
        if key.resets and before[key.resets] != now[key.resets]:
            st.session_state.pop(key.name, None)
            st.query_params.pop(key.name, None)
