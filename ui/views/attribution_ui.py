"""What the attribution page draws besides its charts: cached calls, the agreement table, the texts.

Attributions are cached per (model key, text, target, method, settings, interventions) in caches.ATTRIBUTIONS and the
averaged agreement over fresh examples per (model key, n, settings, interventions) in caches.AGREEMENTS.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import streamlit as st

from i18n import M_, N_, _, message_of
from model.analysis import attribution as attr
from model.analysis.attribution_agreement import REFERENCE, Agreement
from model.analysis.attribution_methods import registry as attr_registry
from model.analysis.budget import BudgetExceeded
from model.analysis.jobs import attribute_methods
from model.interventions import Interventions
from ui.serving import caches
from ui.serving.disk_cache import checkpoint_cached, demo_folder, stored
from ui.serving.workers import WorkerStopped, run_limited, run_with_progress, session_gone, steady
from ui.shell.figure_download import download_row
from ui.shell.safe_text import md
from ui.shell.session import Session
from ui.shell.url_state import Key, Keys

REGISTRY = attr_registry.METHODS  # name -> method module: TITLE, EXPLANATION, SETTINGS, CHEAP, compute
# computed on every visit: the cheap methods (and occlusion, the agreement's reference); flow and integrated
# gradients (seconds) only when the reader picks them
DEFAULT_SHOWN = [m for m, module in REGISTRY.items() if module.CHEAP or m == REFERENCE]
CHOICES = [c for module in REGISTRY.values() for c in module.SETTINGS]
SETTING_KEYS = [Key(c.link, c.default, choices=tuple(c.options), cast=type(c.default)) for c in CHOICES]


@dataclass(frozen=True)
class AttentionWords:
    """How the page names the raw attention it shows beside the methods (marked with N_, translated where shown)."""

    name: str  # the matrix's title
    choice: str  # the matrix's choice
    panel: str  # {layer}, {head}
    average: str  # {layer}
    row: str  # the agreement table's row, {layer}


SELF_WORDS = AttentionWords(
    N_("Self-attention"),
    N_("Self-attention (layer, head above)"),
    N_("Self-attention, layer {layer}, {head}"),
    N_("Self-attention, layer {layer}, average of heads"),
    N_("Self-attention, layer {layer} (head average)"),
)
# the attention kind of model.analysis.attribution.attention_over_source -> its words
ATTENTION_WORDS = {
    "cross": AttentionWords(
        N_("Cross-attention"),
        N_("Cross-attention (layer, head above)"),
        N_("Cross-attention, layer {layer}, {head}"),
        N_("Cross-attention, layer {layer}, average of heads"),
        N_("Cross-attention, layer {layer} (head average)"),
    ),
    "decoder_self": SELF_WORDS,
    "encoder_self": SELF_WORDS,
}
FRESH_CHOICES = [10, 20, 50]  # the page's menu of fresh examples (attr_n)


def title(method: str) -> str:
    return _(REGISTRY[method].TITLE)


def choose_methods(url: Keys) -> list[str]:
    """The methods the page computes and shows (attr_methods in the link); occlusion always, as the reference."""
    url.read("attr_methods")
    st.multiselect(_("Methods"), list(REGISTRY), key="attr_methods", format_func=title)
    shown = [m for m in REGISTRY if m in st.session_state["attr_methods"] or m == REFERENCE]
    url.write(attr_methods=shown)
    return shown


def settings_controls(url: Keys, tokenizer) -> dict:
    """Every method's settings in one collapsed row (the registry's Choices), read from and written to the link;
    each offers the values this model has (a mask token only where its vocabulary has one)."""
    with st.expander(_("Settings of the methods"), icon=":material/tune:"):
        for column, c in zip(st.columns(max(1, len(CHOICES))), CHOICES):
            offered = c.options_for(tokenizer)
            url.read(c.link, choices=offered)
            column.selectbox(_(c.title), offered, key=c.link, format_func=lambda v, c=c: _(str(c.options[v])))
    values = {c.name: st.session_state[c.link] for c in CHOICES}
    url.write(**{c.link: values[c.name] for c in CHOICES})
    return values


AGREEMENT_TEXT = N_(  # said with the words of the model's shape (ui.shell.shapes.say)
    "**Agreement.** *Rank correlation with occlusion*: for each row (a {written}), Spearman's correlation of a "
    "method's scores with occlusion's over the row's columns, averaged over the rows (1: the same order; 0: "
    "unrelated). *Top token is gold*: for demo tasks whose alignment is known, the share of rows whose "
    "highest-scored column is the {read} the row's token comes from. The {attention} rows are each layer's raw "
    "{attention}, heads averaged."
)


def settings_key(settings: dict) -> tuple:
    return tuple(sorted(settings.items()))


def computed(
    session: Session, changes: Interventions, settings: dict, methods: list[str]
) -> dict[str, attr.Attribution]:
    """The scores of `methods` for the session's input, each computed once: the missing ones counted before any
    starts, then computed together in one limited worker process with progress and Cancel."""
    _key, text, target = key = caches.input_key(session)
    keys = {m: (*key, m, settings_key(settings), changes) for m in methods}
    missing = [m for m in methods if keys[m] not in caches.ATTRIBUTIONS]
    done: dict = {}
    if missing:
        plans = method_plans(session, settings, missing)
        done = run_with_progress(
            attribute_methods, session.model, session.tokenizer, text, target, missing, changes, plans,
            progress=True, key=("attribution", *keys[missing[0]]), label=N_("Computing the attributions…"), **settings,
        )  # fmt: skip
        for method, result in done.items():
            caches.ATTRIBUTIONS.put(keys[method], result)
    return {m: done[m] if m in done else caches.ATTRIBUTIONS.get(keys[m], lambda: None) for m in methods}


def method_plans(session: Session, settings: dict, methods: list[str]) -> dict:
    """Each of `methods`' plan for the session's input (model.analysis.attribution.plans: each method module counts
    its own cost): the decoder inputs are the shared decode's output (or the typed target); BudgetExceeded says
    what fits."""
    from model.analysis.budget import WorkBudget
    from model.analysis.budget_input import source_length

    model_key, text, target = caches.input_key(session)
    cfg, tok = session.model.config, session.tokenizer
    S = source_length(tok.source, cfg, text)
    if not cfg.has_decoder:  # an encoder-only model: a row per position (its head's prediction there)
        T = S
    elif target is None:
        T = len(caches.own_output(model_key, text, session.model, tok)) + 1
    else:
        T = source_length(tok.target, cfg, target)
    return attr.plans(cfg, S, T, methods, settings, WorkBudget.from_environment())


def fresh_agreement(
    session: Session,
    changes: Interventions,
    n: int,
    settings: dict,
    methods: list[str],
    progress: Callable[[int, int], None],
) -> Agreement | None:
    """The agreement table averaged over n fresh examples of the demo's task (UnknownTraining: not a demo); None
    when its worker was stopped (the deadline, the memory limit: a warning says so)."""
    try:
        return _fresh(session, changes, n, settings, methods, progress)
    except (WorkerStopped, BudgetExceeded) as stopped:  # the deadline, the memory limit, or refused before it started
        st.warning(md(message_of(stopped)))
        return None


def fresh_plans(session: Session, n: int, settings: dict, methods: list[str]) -> dict:
    """The methods' plans for one of n fresh examples, each counted at the longest input the demo trained on (its
    output as long), within 1/n of one request's operations; BudgetExceeded saying how many examples of the
    page's menu fit (or what fits one example)."""
    from dataclasses import replace

    from model.analysis.budget import WorkBudget

    cfg = session.model.config
    longest = caches.trained_longest(session.card)
    S = T = cfg.max_len if longest is None else min(cfg.max_len, longest + 2)
    budget = WorkBudget.from_environment()

    def plans(k: int) -> dict:
        return attr.plans(cfg, S, T, methods, settings, replace(budget, max_ops=budget.ops // k))

    try:
        return plans(n)
    except BudgetExceeded as err:
        fitting = [k for k in FRESH_CHOICES if k < n and _fits(plans, k)]
        fits = M_("{k} fresh examples fit.", k=max(fitting)) if fitting else message_of(err)
        raise BudgetExceeded(M_(FRESH_OVER, n=n, fits=fits)) from None


FRESH_OVER = N_("The average over {n} fresh examples does not fit this server's budget for one request; {fits}")


def _fits(plans, k: int) -> bool:
    try:
        plans(k)
    except BudgetExceeded:
        return False
    return True


def _fresh(session, changes, n, settings, methods, progress) -> Agreement:
    from tasks import intervened

    def compute() -> Agreement:  # in a limited worker process, the fresh examples drawn there too
        plans = fresh_plans(session, n, settings, methods)  # counted before it starts
        return run_limited(
            intervened.agreement_fresh, session.model, session.tokenizer, session.card, n, changes, methods, progress=True,
            on_progress=steady(progress), should_stop=session_gone, plans=plans, **settings,
        )  # fmt: skip

    key = (session.key, n, settings_key(settings), tuple(methods), changes)
    if changes:
        return caches.AGREEMENTS.get(key, compute)
    params = (
        n,
        settings_key(settings),
        tuple(methods),
    )  # a demo's agreement depends on its checkpoint only: kept on disk
    return caches.AGREEMENTS.get(key, lambda: checkpoint_cached(session.key, "agreement", params, compute))


def has_fresh(session: Session, changes: Interventions, n: int, settings: dict, methods: list[str]) -> bool:
    if (session.key, n, settings_key(settings), tuple(methods), changes) in caches.AGREEMENTS:
        return True
    folder = None if changes else demo_folder(session.key)
    return folder is not None and stored(folder, "agreement", (n, settings_key(settings), tuple(methods)))


def row_name(name: str, kind: str = "cross") -> str:
    if name.startswith("cross_"):  # a layer's raw attention (agreement's rows), cross or the one stack's self
        return _(ATTENTION_WORDS[kind].row).format(layer=name.split("_", 1)[1])
    return title(name)


def show_table(table: Agreement, kind: str = "cross") -> None:
    """The agreement table as a dataframe (— where a number is not defined); kind: the raw attention's."""

    def cell(v: float) -> str:
        return "—" if np.isnan(v) else f"{v:.3f}"

    st.dataframe(
        {
            _("Explanation"): [row_name(n, kind) for n in table.names],
            _("Rank correlation with occlusion"): [cell(v) for v in table.spearman],
            _("Top token is gold"): [cell(v) for v in table.gold],
        },
        hide_index=True,
    )


def downloads(results: dict[str, attr.Attribution]) -> None:
    download_row(
        (_("Download the scores (.npz)"), lambda: attr.attributions_npz(results), "attribution.npz", "attr_dl_npz"),
        (_("Download the scores (.json)"), lambda: attr.attributions_json(results), "attribution.json", "attr_dl_json"),
    )
