"""What the attribution page (issue 26) draws besides its charts: cached calls, the agreement table, the texts.

Attributions are cached per (model key, text, target, method, settings, interventions) in caches.ATTRIBUTIONS and the
averaged agreement over fresh examples per (model key, n, settings, interventions) in caches.AGREEMENTS.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st

from i18n import N_, _, message_of
from model.analysis import attribution as attr
from model.analysis.attribution_agreement import Agreement
from model.analysis.jobs import attribute_methods
from model.interventions import Interventions
from ui import caches
from ui.disk_cache import checkpoint_cached, demo_folder, stored
from ui.safe_text import md
from ui.session import Session
from ui.workers import WorkerStopped, run_limited, run_with_progress, session_gone, steady

NAMES = {  # method -> its name on the page (marked; translated where shown)
    "rollout": N_("Attention rollout"),
    "flow": N_("Attention flow"),
    "grad_x_input": N_("Gradient × input"),
    "integrated_gradients": N_("Integrated gradients"),
    "occlusion": N_("Occlusion"),
}
EXPLAIN = {
    "rollout": N_(
        "**Attention rollout** (Abnar & Zuidema 2020): each layer's attention, heads averaged, with the residual "
        "counted as 0.5 I + 0.5 A, multiplied through the encoder (R_ss); into the decoder after Chefer et al. 2021: "
        "each decoder self-attention step mixes what the positions hold (R_ts ← Â R_ts), each cross-attention step "
        "keeps half and adds half of the cross-attention times the encoder's rollout (R_ts ← 0.5 R_ts + 0.5 Ā_x R_ss). "
        "Rows sum to 1. Heads switched off are left out of the averages."
    ),
    "flow": N_(
        "**Attention flow** (Abnar & Zuidema 2020): the same layered graph with the weights as capacities; the score "
        "of a source token is the maximum flow from the output position to it (networkx). Rows sum to 1."
    ),
    "grad_x_input": N_(
        "**Gradient × input**: the source token's embedding times (elementwise) the gradient of the output token's "
        "log-probability with respect to it (Captum), its length over the embedding. Unsigned: the signed sum "
        "cancels out. Small where the model is sure (the softmax saturates); the order of the tokens stays."
    ),
    "integrated_gradients": N_(
        "**Integrated gradients** (Sundararajan et al. 2017, Captum): the gradient averaged along the straight path "
        "from a baseline (below) to the source embeddings, times their difference. A row sums to the change in the "
        "output token's log-probability from the baseline to the input (completeness; the path is cut into more "
        "pieces until it holds within 0.4%)."
    ),
    "occlusion": N_(
        "**Occlusion**: how much the output token's log-probability drops when this one source token is replaced "
        "(by the token chosen below), the decoder input held fixed. What the model actually uses: the reference "
        "of the agreement table."
    ),
}
AGREEMENT_TEXT = N_(
    "**Agreement.** *Rank correlation with occlusion*: for each output token, Spearman's correlation of a method's "
    "scores with occlusion's over the source tokens, averaged over the output tokens (1: the same order; 0: "
    "unrelated). *Top token is gold*: for demo tasks whose alignment is known, the share of output tokens whose "
    "highest-scored source token is the one it comes from. The cross-attention rows are each layer's raw "
    "cross-attention, heads averaged."
)


def settings_key(settings: dict) -> tuple:
    return tuple(sorted(settings.items()))


def all_methods(session: Session, changes: Interventions, settings: dict) -> dict[str, attr.Attribution]:
    """Every method's scores for the session's input, computed once (a progress bar while any is missing)."""
    _key, text, target = key = caches.input_key(session)
    keys = {m: (*key, m, settings_key(settings), changes) for m in attr.METHODS}
    missing = [m for m in attr.METHODS if keys[m] not in caches.ATTRIBUTIONS]
    computed: dict = {}
    if missing:  # counted before any method starts (issue 30), then computed in one limited worker process
        plans = gradient_plans(session, settings)
        computed = run_with_progress(
            attribute_methods, session.model, session.tokenizer, text, target, missing, changes, plans,
            progress=True, key=("attribution", *keys[missing[0]]), label=N_("Computing the attributions…"), **settings,
        )  # fmt: skip
        for method, result in computed.items():
            caches.ATTRIBUTIONS.put(keys[method], result)
    return {m: computed[m] if m in computed else caches.ATTRIBUTIONS.get(keys[m], lambda: None) for m in attr.METHODS}


def gradient_plans(session: Session, settings: dict) -> dict:
    """The gradient methods' plans for the session's input (model.analysis.budget.attribution_plans): the decoder
    inputs are the shared decode's output (or the typed target); BudgetExceeded says what fits."""
    from model.analysis.budget import WorkBudget, attribution_plans, source_length

    model_key, text, target = caches.input_key(session)
    cfg, tok = session.model.config, session.tokenizer
    S = source_length(tok.source, cfg, text)
    if target is None:
        T = len(caches.own_output(model_key, text, session.model, tok)) + 1
    else:
        T = source_length(tok.target, cfg, target)
    return attribution_plans(cfg, S, T, int(settings.get("steps", attr.DEFAULT_STEPS)), WorkBudget.from_environment())


def fresh_agreement(
    session: Session, changes: Interventions, n: int, settings: dict, progress: Callable[[int, int], None]
) -> Agreement | None:
    """The agreement table averaged over n fresh examples of the demo's task (UnknownTraining: not a demo); None
    when its worker was stopped (the deadline, the memory limit: a warning says so)."""
    try:
        return _fresh(session, changes, n, settings, progress)
    except WorkerStopped as stopped:
        st.warning(md(message_of(stopped)))
        return None


def _fresh(session, changes, n, settings, progress) -> Agreement:
    from tasks import intervened

    def compute() -> Agreement:  # in a limited worker process (issue 30), the fresh examples drawn there too
        return run_limited(
            intervened.agreement_fresh, session.model, session.tokenizer, session.card, n, changes, progress=True,
            on_progress=steady(progress), should_stop=session_gone, **settings,
        )  # fmt: skip

    key = (session.key, n, settings_key(settings), changes)
    if changes:
        return caches.AGREEMENTS.get(key, compute)
    params = (n, settings_key(settings))  # a demo's agreement depends on its checkpoint only: kept on disk
    return caches.AGREEMENTS.get(key, lambda: checkpoint_cached(session.key, "agreement", params, compute))


def has_fresh(session: Session, changes: Interventions, n: int, settings: dict) -> bool:
    if (session.key, n, settings_key(settings), changes) in caches.AGREEMENTS:
        return True
    folder = None if changes else demo_folder(session.key)
    return folder is not None and stored(folder, "agreement", (n, settings_key(settings)))


def row_name(name: str) -> str:
    if name.startswith("cross_"):
        return _("Cross-attention, layer {layer} (head average)").format(layer=name.split("_", 1)[1])
    return _(NAMES[name])


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
