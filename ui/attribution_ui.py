"""What the attribution page (issue 26) draws besides its charts: cached calls, the agreement table, the texts.

Attributions are cached per (model key, text, target, method, settings, interventions) in caches.ATTRIBUTIONS and the
averaged agreement over fresh examples per (model key, n, settings, interventions) in caches.AGREEMENTS.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st

from i18n import N_, _
from model.analysis import attribution as attr
from model.analysis.attribution_agreement import REFERENCE, Agreement, agreement_over
from model.analysis.attribution_methods import registry as attr_registry
from model.interventions import Interventions
from ui import caches
from ui.session import Session
from ui.url_state import Key, Keys

REGISTRY = attr_registry.METHODS  # name -> method module: TITLE, EXPLANATION, SETTINGS, CHEAP, compute
# computed on every visit: the cheap methods (and occlusion, the agreement's reference); flow and integrated
# gradients (seconds) only when the reader picks them
DEFAULT_SHOWN = [m for m, module in REGISTRY.items() if module.CHEAP or m == REFERENCE]
CHOICES = [c for module in REGISTRY.values() for c in module.SETTINGS]
SETTING_KEYS = [Key(c.link, c.default, choices=tuple(c.options), cast=type(c.default)) for c in CHOICES]


def title(method: str) -> str:
    return _(REGISTRY[method].TITLE)


def choose_methods(url: Keys) -> list[str]:
    """The methods the page computes and shows (attr_methods in the link); occlusion always, as the reference."""
    url.read("attr_methods")
    st.multiselect(_("Methods"), list(REGISTRY), key="attr_methods", format_func=title)
    shown = [m for m in REGISTRY if m in st.session_state["attr_methods"] or m == REFERENCE]
    url.write(attr_methods=shown)
    return shown


def settings_controls(url: Keys) -> dict:
    """Every method's settings in one collapsed row (the registry's Choices), read from and written to the link."""
    with st.expander(_("Settings of the methods"), icon=":material/tune:"):
        for column, c in zip(st.columns(max(1, len(CHOICES))), CHOICES):
            url.read(c.link)
            column.selectbox(_(c.title), list(c.options), key=c.link, format_func=lambda v, c=c: _(str(c.options[v])))
    values = {c.name: st.session_state[c.link] for c in CHOICES}
    url.write(**{c.link: values[c.name] for c in CHOICES})
    return values


AGREEMENT_TEXT = N_(
    "**Agreement.** *Rank correlation with occlusion*: for each output token, Spearman's correlation of a method's "
    "scores with occlusion's over the source tokens, averaged over the output tokens (1: the same order; 0: "
    "unrelated). *Top token is gold*: for demo tasks whose alignment is known, the share of output tokens whose "
    "highest-scored source token is the one it comes from. The cross-attention rows are each layer's raw "
    "cross-attention, heads averaged."
)


def settings_key(settings: dict) -> tuple:
    return tuple(sorted(settings.items()))


def computed(
    session: Session, changes: Interventions, settings: dict, methods: list[str]
) -> dict[str, attr.Attribution]:
    """The scores of `methods` for the session's input, each computed once (a progress bar while any is missing)."""
    _key, text, target = key = caches.input_key(session)
    keys = {m: (*key, m, settings_key(settings), changes) for m in methods}
    missing = [m for m in methods if keys[m] not in caches.ATTRIBUTIONS]
    bar = st.progress(0.0, text=_("Computing the attributions…")) if missing else None
    out = {}
    for i, method in enumerate(methods):

        def report(done: int, total: int, i: int = i) -> None:
            if bar is not None:
                bar.progress(min(1.0, (i + done / max(total, 1)) / len(methods)))

        out[method] = caches.ATTRIBUTIONS.get(
            keys[method],
            lambda m=method: attr.attribute(
                session.model, session.tokenizer, text, target, method=m, interventions=changes, progress=report,
                **settings,
            ),
        )  # fmt: skip
    if bar is not None:
        bar.empty()
    return out


def fresh_agreement(
    session: Session,
    changes: Interventions,
    n: int,
    settings: dict,
    methods: list[str],
    progress: Callable[[int, int], None],
) -> Agreement:
    """The agreement table averaged over n fresh examples of the demo's task (UnknownTraining: not a demo)."""
    from tasks import intervened

    examples = caches.EXAMPLES.get((session.key, n), lambda: intervened.fresh_examples(session.card, n))
    return caches.AGREEMENTS.get(
        (session.key, n, settings_key(settings), tuple(methods), changes),
        lambda: agreement_over(
            session.model, session.tokenizer, examples, methods, interventions=changes, progress=progress, **settings
        ),
    )


def has_fresh(session: Session, changes: Interventions, n: int, settings: dict, methods: list[str]) -> bool:
    return (session.key, n, settings_key(settings), tuple(methods), changes) in caches.AGREEMENTS


def row_name(name: str) -> str:
    if name.startswith("cross_"):
        return _("Cross-attention, layer {layer} (head average)").format(layer=name.split("_", 1)[1])
    return title(name)


def show_table(table: Agreement) -> None:
    """The agreement table as a dataframe (— where a number is not defined)."""

    def cell(v: float) -> str:
        return "—" if np.isnan(v) else f"{v:.3f}"

    st.dataframe(
        {
            _("Explanation"): [row_name(n) for n in table.names],
            _("Rank correlation with occlusion"): [cell(v) for v in table.spearman],
            _("Top token is gold"): [cell(v) for v in table.gold],
        },
        hide_index=True,
    )


def downloads(results: dict[str, attr.Attribution]) -> None:
    left, right = st.columns(2)
    left.download_button(_("Download the scores (.npz)"), lambda: attr.attributions_npz(results),
                         file_name="attribution.npz", mime="application/octet-stream", key="attr_dl_npz",
                         on_click="ignore")  # fmt: skip
    right.download_button(_("Download the scores (.json)"), lambda: attr.attributions_json(results),
                          file_name="attribution.json", mime="application/json", key="attr_dl_json",
                          on_click="ignore")  # fmt: skip
