"""The decoding page's strategy choice, driven by the strategies' registry (model/decoding/strategies.py).

Every strategy in the page's menu (a `LINK` in its library module) has two halves:
- the library half, `model/decoding/NAME.py`: NAME, TITLE, LINK, SETTINGS (one `Setting` per keyword of its
  `decode()`: default, bounds, label, link key) and `decode(model, tokenizer, source, *, interventions, max_len,
  **settings)`;
- the app half, the module its library module names in APP (`ui/views/decoding_views/NAME.py`): `view(session,
  strategy, changes)`, what the page shows for it; the registry finds it.
`choose()` draws the menu and the chosen strategy's settings from those declarations, reads and writes them in the
link (a value that is not valid is named on the page and replaced by the default); the page then calls the view.
Nothing here or on the page names a strategy.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

import streamlit as st

from i18n import N_, _
from model.decoding import STRATEGIES as LIBRARY_STRATEGIES
from model.decoding.strategies import REGISTRY
from ui.shell.url_state import Key, Keys

# the page's menu, in the registry's order: link value -> library module, and the app half of each (its APP)
MENU: dict[str, ModuleType] = {m.LINK: m for m in LIBRARY_STRATEGIES.values() if m.LINK}
VIEWS: dict[str, ModuleType] = {m.LINK: REGISTRY.app(m.NAME) for m in MENU.values()}
DEFAULT = next(iter(MENU))
SETTINGS = [s for m in MENU.values() for s in m.SETTINGS]


def _key(s) -> Key:
    low, high = s.low, s.high
    ok = (lambda v, lo=low, hi=high: lo <= v <= hi) if high is not None else (lambda v, lo=low: v >= lo)
    # cast also rounds (to the widget's precision), so the box, the link and the computation hold one value
    return Key(s.link, s.default, cast=s.cast, ok=ok, what=s.what)


URL = Keys(
    Key("dec_strategy", DEFAULT, choices=tuple(MENU), what=N_("the decoding strategy"),
        encode=lambda v: None if v == DEFAULT else v),
    *(_key(s) for s in SETTINGS),
)  # fmt: skip


@dataclass(frozen=True)
class Strategy:
    link: str  # a key of MENU: the strategy as the link writes it
    values: tuple[tuple[str, float], ...] = ()  # (decode() keyword, value) of each of its settings

    @property
    def module(self) -> ModuleType:
        return MENU[self.link]

    @property
    def name(self) -> str:
        return self.module.NAME

    @property
    def settings(self) -> dict[str, float]:
        return dict(self.values)

    def view(self, session, changes) -> None:
        VIEWS[self.link].view(session, self, changes)


def choose(vocab_size: int) -> Strategy:
    """The strategy control and the chosen strategy's settings in one row (in the URL as dec_strategy and each
    setting's link key); messages for values of a link that were not valid."""
    link = URL.read("dec_strategy")
    declared = MENU[link].SETTINGS
    cols = st.columns([2.4, *([1] * max(4, len(declared)))], vertical_alignment="bottom")
    cols[0].segmented_control(
        _("Strategy"), list(MENU), key="dec_strategy", format_func=lambda k: _(MENU[k].TITLE), required=True
    )
    link = st.session_state["dec_strategy"] or link
    values = []
    for col, s in zip(cols[1:], MENU[link].SETTINGS):
        low, high = s.bounds(vocab_size)
        value = URL.read(s.link, ok=lambda v, lo=low, hi=high: lo <= v <= hi)  # kept from a larger vocabulary: default
        if s.digits:
            col.number_input(_(s.title), float(low), float(high), key=s.link, step=float(s.step),
                             format=f"%.{s.digits}f", help=_(s.help) if s.help else None)  # fmt: skip
        else:
            col.number_input(_(s.title), int(low), int(high), key=s.link, step=int(s.step),
                             help=_(s.help) if s.help else None)  # fmt: skip
        values.append((s.name, s.cast(value)))
    strategy = Strategy(link, tuple(values))
    mine = {s.link for s in MENU[link].SETTINGS}
    URL.write(dec_strategy=link, **{s.link: (strategy.settings[s.name] if s.link in mine else None) for s in SETTINGS})
    return strategy
