"""The decoding page's strategy choice: greedy, beam search or sampling, with their settings in the URL.

`choose()` draws the choice and the chosen strategy's settings (one row) and returns them; a value in a link
that is not valid is named on the page and replaced by the default. Greedy and sampling share the page's
step viewer (both give a Trace); sampling adds what every token was drawn from (`sampling_view`); beam search
has its own view (pages/decoding_beam.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import streamlit as st

from i18n import N_, _
from model.strategy_export import sampling_csv, sampling_json
from ui import url_state
from ui.caches import cached_sample
from ui.presentation import chart_box, chart_text_px, show
from viz import strategy_figs

STRATEGIES = {"greedy": N_("Greedy"), "beam": N_("Beam search"), "sample": N_("Sampling")}
MAX_BEAM = 8
MAX_TEMPERATURE = 5.0
MAX_SEED = 2**31 - 1
_PROBLEMS = "_dec_url_problems"


@dataclass(frozen=True)
class Strategy:
    name: str  # a key of STRATEGIES
    beam_size: int = 4
    length_penalty: float = 0.6
    temperature: float = 1.0
    top_k: int = 0  # 0: every token
    top_p: float = 1.0
    seed: int = 0

    def sampling(self) -> dict:
        """The settings a sampled decoding depends on (for its file)."""
        return {k: v for k, v in asdict(self).items() if k in ("temperature", "top_k", "top_p", "seed")}


def _from_url(key: str, default, ok: Callable[[object], bool], cast: Callable[[str], object], what: str):
    """st.session_state[key] from the link once (else the default); a value that is not valid is remembered as a
    message for this run (never echoed: a link's value could be anything) and the default used.

    cast also rounds (e.g. to the widget's precision), so the box, the link and the computation hold one value."""
    if key not in st.session_state:
        raw = st.query_params.get(key)
        value = default
        if raw is not None:
            try:
                parsed = cast(raw)
                valid = ok(parsed)
            except (TypeError, ValueError, OverflowError):
                valid = False
            if valid:
                value = parsed
            else:
                st.session_state.setdefault(_PROBLEMS, []).append(what)
        st.session_state[key] = value
    return st.session_state[key]


def _finite(lo: float, hi: float) -> Callable[[object], bool]:
    return lambda v: isinstance(v, (int, float)) and math.isfinite(v) and lo <= v <= hi


def _rounded(decimals: int) -> Callable[[str], float]:
    """float(text) rounded to `decimals` (nan and inf stay, and are refused by _finite)."""
    return lambda raw: round(float(raw), decimals) if math.isfinite(float(raw)) else float(raw)


def choose(vocab_size: int) -> Strategy:
    """The strategy control and its settings (in the URL as dec_strategy, dec_beam, dec_lp, dec_temp, dec_sk,
    dec_sp, dec_seed); messages for values of a link that were not valid."""
    name = _from_url("dec_strategy", "greedy", lambda v: v in STRATEGIES, str, _("the decoding strategy"))
    cols = st.columns([2.4, 1, 1, 1, 1], vertical_alignment="bottom")  # one row: the choice, then its settings
    cols[0].segmented_control(
        _("Strategy"),
        list(STRATEGIES),
        key="dec_strategy",
        format_func=lambda k: _(STRATEGIES[k]),
        required=True,
    )
    name = st.session_state["dec_strategy"] or name
    settings = Strategy(name)
    if name == "beam":
        beam = _from_url("dec_beam", 4, lambda v: 1 <= v <= MAX_BEAM, int, _("the beam size"))
        lp = _from_url("dec_lp", 0.6, _finite(0.0, 2.0), _rounded(1), _("the length penalty"))
        cols[1].number_input(_("Beam size"), 1, MAX_BEAM, key="dec_beam", step=1)
        cols[2].number_input(
            _("Length penalty α"), 0.0, 2.0, key="dec_lp", step=0.1, format="%.1f",
            help=_("score = log p / ((5 + length) / 6)^α; the paper uses α = 0.6 with beam size 4"),
        )  # fmt: skip
        settings = Strategy(name, beam_size=int(beam), length_penalty=round(float(lp), 1))
    elif name == "sample":
        temp = _from_url("dec_temp", 1.0, _finite(0.0, MAX_TEMPERATURE), _rounded(2), _("the temperature"))
        top_k = _from_url("dec_sk", 0, lambda v: 0 <= v <= vocab_size, int, _("top-k"))
        if top_k > vocab_size:  # kept from a model with a larger vocabulary
            st.session_state["dec_sk"] = top_k = vocab_size
        top_p = _from_url("dec_sp", 1.0, _finite(0.01, 1.0), _rounded(2), _("top-p"))
        seed = _from_url("dec_seed", 0, lambda v: 0 <= v <= MAX_SEED, int, _("the seed"))
        cols[1].number_input(
            _("Temperature"), 0.0, MAX_TEMPERATURE, key="dec_temp", step=0.1, format="%.2f",
            help=_("Divides the logits: below 1 sharper, above 1 flatter; 0 is greedy decoding."),
        )  # fmt: skip
        cols[2].number_input(_("Top-k (0: all)"), 0, vocab_size, key="dec_sk", step=1)
        cols[3].number_input(
            _("Top-p"), 0.01, 1.0, key="dec_sp", step=0.05, format="%.2f",
            help=_("Keep the most probable tokens until their probabilities reach p (the nucleus)."),
        )  # fmt: skip
        cols[4].number_input(
            _("Seed"), 0, MAX_SEED, key="dec_seed", step=1, help=_("The same seed draws the same tokens.")
        )
        settings = Strategy(name, temperature=round(float(temp), 2), top_k=int(top_k), top_p=round(float(top_p), 2),
                            seed=int(seed))  # fmt: skip
    for what in st.session_state.pop(_PROBLEMS, []):
        st.warning(_("The link's value for {what} is not valid here; the default is used instead.").format(what=what))
    write_url(settings)
    return settings


def write_url(s: Strategy) -> None:
    beam, sample = s.name == "beam", s.name == "sample"
    url_state.write_url(
        dec_strategy=None if s.name == "greedy" else s.name,
        dec_beam=s.beam_size if beam else None,
        dec_lp=s.length_penalty if beam else None,
        dec_temp=s.temperature if sample else None,
        dec_sk=s.top_k if sample else None,
        dec_sp=s.top_p if sample else None,
        dec_seed=s.seed if sample else None,
    )


def sampled_trace(session, s: Strategy, shown: int):
    """The sampled decoding of the session's input with these settings (cached per settings and seed)."""
    return cached_sample(
        session.key, session.check.text, s.temperature, s.top_k, s.top_p, s.seed, shown, session.model,
        session.tokenizer,
    )  # fmt: skip


def explain_sampling(s: Strategy) -> None:
    with st.expander(_("Sampling"), icon=":material/info:"):
        st.markdown(
            _(
                "Each step draws the next token at random from the model's distribution instead of taking the most "
                "probable one. The logits are divided by the **temperature** first; **top-k** keeps only the k most "
                "probable tokens, renormalised; **top-p** then keeps the smallest set of those whose renormalised "
                "probabilities reach p, renormalised again (the order and definitions of Hugging Face's generate). "
                "The **seed** fixes the draws, so a link shows the same output again."
            )
        )
        st.latex(r"P_T(y)\propto \exp(z_y / T),\quad y \in \text{top-}k \cap \text{nucleus}(p)")


def sampling_view(trace, s: Strategy) -> None:
    """Every step's distribution (top candidates after temperature, top-k and top-p; the drawn one outlined),
    and the sampled decoding as JSON and CSV."""
    st.subheader(_("What each token was drawn from"))
    explain_sampling(s)
    steps = trace.steps
    drawn = [list(st_.top_ids).index(st_.token_id) if st_.token_id in st_.top_ids else -1 for st_ in steps]
    fig = strategy_figs.sampling_overview(
        [st_.top_tokens for st_ in steps],
        np.stack([st_.top_probs for st_ in steps]) if steps else np.zeros((0, 1)),
        drawn,
        [st_.token for st_ in steps],
        [st_.prob for st_ in steps],
        title=_("Drawn with temperature {t}, top-k {k}, top-p {p}, seed {seed}").format(
            t=s.temperature, k=s.top_k or _("all"), p=s.top_p, seed=s.seed
        ),
        width_px=chart_box()[1],
        tick_px=chart_text_px(),
    )
    show(fig, key="dec_sampling")
    left, right = st.columns(2)
    left.download_button(
        _("Download the sampled distributions (.json)"),
        lambda: sampling_json(trace, s.sampling()),
        file_name="sampling.json",
        mime="application/json",
        key="dec_dl_sampling_json",
        on_click="ignore",
    )
    right.download_button(
        _("Download the sampled distributions (.csv)"),
        lambda: sampling_csv(trace),
        file_name="sampling.csv",
        mime="text/csv",
        key="dec_dl_sampling_csv",
        on_click="ignore",
    )
