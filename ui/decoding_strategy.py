"""The decoding page's strategy choice: greedy, beam search or sampling, with their settings in the URL.

`choose()` draws the choice and the chosen strategy's settings (one row) and returns them; a value in a link
that is not valid is named on the page and replaced by the default. Greedy and sampling share the page's
step viewer (both give a Trace); sampling adds what every token was drawn from (`sampling_view`); beam search
has its own view (ui/decoding_beam.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import streamlit as st

from i18n import N_, _
from model.decoding import STRATEGIES as LIBRARY_STRATEGIES
from model.decoding.strategy_export import sampling_csv, sampling_json
from ui.caches import cached_sample
from ui.presentation import chart_box, chart_text_px, show
from ui.url_state import Key, Keys, between, finite, rounded
from viz import strategy_figs

# the page's menu, from the library's registry: each strategy module says how a link writes it and its title
STRATEGIES = {m.LINK: m.TITLE for m in LIBRARY_STRATEGIES.values() if m.LINK}
MAX_BEAM = 8
MAX_TEMPERATURE = 5.0
MAX_SEED = 2**31 - 1


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


# cast also rounds (to the widget's precision), so the box, the link and the computation hold one value.
URL = Keys(
    Key("dec_strategy", "greedy", choices=tuple(STRATEGIES), what=N_("the decoding strategy"),
        encode=lambda v: None if v == "greedy" else v),
    Key("dec_beam", 4, cast=int, ok=between(1, MAX_BEAM), what=N_("the beam size")),
    Key("dec_lp", 0.6, cast=rounded(1), ok=finite(0.0, 2.0), what=N_("the length penalty")),
    Key("dec_temp", 1.0, cast=rounded(2), ok=finite(0.0, MAX_TEMPERATURE), what=N_("the temperature")),
    Key("dec_sk", 0, cast=int, what=N_("top-k")),  # bound: the model's vocabulary
    Key("dec_sp", 1.0, cast=rounded(2), ok=finite(0.01, 1.0), what=N_("top-p")),
    Key("dec_seed", 0, cast=int, ok=between(0, MAX_SEED), what=N_("the seed")),
)  # fmt: skip


def choose(vocab_size: int) -> Strategy:
    """The strategy control and its settings (in the URL as dec_strategy, dec_beam, dec_lp, dec_temp, dec_sk,
    dec_sp, dec_seed); messages for values of a link that were not valid."""
    name = URL.read("dec_strategy")
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
        beam = URL.read("dec_beam")
        lp = URL.read("dec_lp")
        cols[1].number_input(_("Beam size"), 1, MAX_BEAM, key="dec_beam", step=1)
        cols[2].number_input(
            _("Length penalty α"), 0.0, 2.0, key="dec_lp", step=0.1, format="%.1f",
            help=_("score = log p / ((5 + length) / 6)^α; the paper uses α = 0.6 with beam size 4"),
        )  # fmt: skip
        settings = Strategy(name, beam_size=int(beam), length_penalty=round(float(lp), 1))
    elif name == "sample":
        temp = URL.read("dec_temp")
        top_k = URL.read("dec_sk", ok=between(0, vocab_size))  # kept from a larger vocabulary: 0 (all) again
        top_p = URL.read("dec_sp")
        seed = URL.read("dec_seed")
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
    write_url(settings)
    return settings


def write_url(s: Strategy) -> None:
    beam, sample = s.name == "beam", s.name == "sample"
    URL.write(
        dec_strategy=s.name,
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
