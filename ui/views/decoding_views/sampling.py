"""Sampling on the decoding page: the step viewer, then what every token was drawn from, with its downloads."""

from __future__ import annotations

import numpy as np
import streamlit as st

from i18n import N_, _
from model.decoding import sampling
from model.decoding.strategy_export import sampling_csv, sampling_json
from ui.serving import caches
from ui.shell.explain import explain, explain_row
from ui.shell.figure_download import download_row
from ui.shell.presentation import chart_box, chart_text_px, show
from ui.views import decoding_steps as steps
from viz import strategy_figs


def view(session, strategy, changes) -> None:
    trace = caches.cached_decoding(session, strategy, changes, shown=steps.shown())
    playing, effect = steps.step_view(session, trace, changes)
    steps.label_smoothing(session)
    explain_row("specials", config=session.model.config)
    sampling_view(trace, strategy.settings)
    steps.alignment_view(session, trace, changes)
    steps.finish(session, changes, playing, effect)


EXPLANATION = (  # the strategy's explanation (ui.shell.explain.explain), titled by the strategy's own TITLE
    sampling.TITLE,
    N_(
        "Each step draws the next token at random from the model's distribution instead of taking the most "
        "probable one. The logits are divided by the **temperature** first; **top-k** keeps only the k most "
        "probable tokens, renormalised; **top-p** then keeps the smallest set of those whose renormalised "
        "probabilities reach p, renormalised again (the order and definitions of Hugging Face's generate). "
        "The **seed** fixes the draws, so a link shows the same output again."
    ),
    (r"P_T(y)\propto \exp(z_y / T),\quad y \in \text{top-}k \cap \text{nucleus}(p)",),
)


def sampling_view(trace, s: dict) -> None:
    """Every step's distribution (top candidates after temperature, top-k and top-p; the drawn one outlined),
    and the sampled decoding as JSON and CSV."""
    st.subheader(_("What each token was drawn from"))
    explain(EXPLANATION)
    steps = trace.steps
    drawn = [list(st_.top_ids).index(st_.token_id) if st_.token_id in st_.top_ids else -1 for st_ in steps]
    fig = strategy_figs.sampling_overview(
        [st_.top_tokens for st_ in steps],
        np.stack([st_.top_probs for st_ in steps]) if steps else np.zeros((0, 1)),
        drawn,
        [st_.token for st_ in steps],
        [st_.prob for st_ in steps],
        title=_("Drawn with temperature {t}, top-k {k}, top-p {p}, seed {seed}").format(
            t=s["temperature"], k=s["top_k"] or _("all"), p=s["top_p"], seed=s["seed"]
        ),
        width_px=chart_box()[1],
        tick_px=chart_text_px(),
    )
    show(fig, key="dec_sampling")
    download_row(
        (
            _("Download the sampled distributions (.json)"),
            lambda: sampling_json(trace, s),
            "sampling.json",
            "dec_dl_sampling_json",
        ),
        (
            _("Download the sampled distributions (.csv)"),
            lambda: sampling_csv(trace),
            "sampling.csv",
            "dec_dl_sampling_csv",
        ),
    )
