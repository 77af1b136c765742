"""Beam search on the decoding page: the tree of hypotheses, one step's hypotheses with their scores, and the
cross-attention of a chosen hypothesis at each of its steps (a model with an encoder: a decoder-only one has none)."""

from __future__ import annotations

import streamlit as st

from i18n import N_, _
from model.analysis.budget import WorkBudget, beam_refusal
from model.analysis.budget_input import source_length
from model.decoding import beam
from model.decoding.strategy_export import beam_csv, beam_json
from tasks.gold import gold_alignment
from ui.serving import caches
from ui.shell.explain import explain
from ui.shell.figure_download import download_row
from ui.shell.presentation import chart_box, chart_text_px, show
from ui.shell.safe_text import esc, md
from ui.shell.url_state import Key, Keys
from viz import attention_figs, decoding_figs, strategy_figs
from viz.tokens import output_rows, plain_token

# default and choices: the search's steps, hypotheses and the model's layers
URL = Keys(Key("dec_bstep", cast=int), Key("dec_bhyp", 0, cast=int), Key("dec_blayer", cast=int))

STATUS = {"live": N_("kept"), "finished": N_("finished"), "pruned": N_("pruned")}
STOPS = {
    "finished": N_("{k} hypotheses finished and none live could beat them"),
    "eos": N_("no hypothesis was left to extend"),
    "max_len": N_("the length limit"),
}


EXPLANATION = (  # the strategy's explanation (ui.shell.explain.explain), titled by the strategy's own TITLE
    beam.TITLE,
    N_(
        "Instead of one output, the search keeps the **k** most probable partial outputs (the beam). Each "
        "step extends every kept hypothesis by every token, ranks the 2k best extensions by their summed "
        "log-probability, keeps the k best that did not end, sets aside those that wrote `</s>` "
        "(finished), and drops the rest (pruned). The winner is the finished hypothesis with the best "
        "score: its log-probability divided by a length penalty, so that longer outputs are not "
        "punished for every extra token. With k = 1 this is greedy decoding."
    ),
    (r"\mathrm{score}(y)=\frac{\log P(y\mid x)}{\left((5+|y|)/6\right)^{\alpha}}",),
)


def view(session, strategy, changes) -> None:
    """Everything the page shows for a beam search of the session's input with the strategy's settings."""
    s = strategy.settings
    cfg = session.model.config
    source = source_length(session.tokenizer.source, cfg, session.check.text)
    if (refusal := beam_refusal(cfg, source, s["beam_size"], WorkBudget.from_environment())) is not None:
        st.error(md(refusal))  # before any work: a wide beam over a long input keeps 2k rows of every map per step
        return
    trace = caches.cached_decoding(session, strategy, changes)
    stop = _(STOPS[trace.stop_reason]).format(k=trace.beam_size)
    max_height, max_width = chart_box()
    n = len(trace.steps)
    step = URL.read("dec_bstep", n - 1, range(n))
    show(
        strategy_figs.beam_tree(
            trace.tree(),
            title=_("Beam size {k}, length penalty {a}: kept, finished and pruned hypotheses").format(
                k=trace.beam_size, a=trace.length_penalty
            ),
            width_px=max_width,
            tick_px=chart_text_px(),
            current=step,
        ),
        key="dec_beam_tree",
    )
    st.markdown(  # below the tree: the tree whole on a projector's first screen, the heads switch above it
        _("**Best hypothesis:** {text} · score {score:.3f} · {n} steps, stopped: {stop}").format(
            text=esc(trace.text) or "∅", score=trace.score, n=len(trace.steps), stop=stop
        )
    )
    explain(EXPLANATION)
    if n > 1:
        st.select_slider(_("Step"), list(range(n)), key="dec_bstep", format_func=lambda i: str(i + 1))
    at = trace.steps[step]
    rows = [
        {
            _("status"): _(STATUS[status]),
            _("rank"): h.rank + 1,
            _("hypothesis"): " ".join(plain_token(t) for t in h.tokens),
            "log p": round(h.log_prob, 4),
            _("score"): round(h.score, 4),
        }
        for status in ("live", "finished", "pruned")
        for h in getattr(at, status)
    ]
    st.dataframe(sorted(rows, key=lambda r: r[_("rank")]), hide_index=True, width="stretch")

    if cfg.has_encoder:  # a decoder-only model has no source: no cross-attention to follow
        _hypothesis_alignment(session, trace, step)
    else:
        URL.write(dec_bstep=step)
    download_row(
        (_("Download this beam search (.json)"), lambda: beam_json(trace), "beam.json", "dec_dl_beam_json"),
        (_("Download every hypothesis (.csv)"), lambda: beam_csv(trace), "beam.csv", "dec_dl_beam_csv"),
    )
    caches.capture_downloads(session, "dec", changes)


def _hypothesis_alignment(session, trace, step: int) -> None:
    """The cross-attention of a chosen finished hypothesis (or the best), row by row, at one layer."""
    detok = session.tokenizer.target.detokenize
    max_height, max_width = chart_box()
    st.subheader(_("Cross-attention of a hypothesis, step by step"))
    chosen = trace.finished() or ([trace.best] if trace.best else [])
    if not chosen:
        st.info(_("The search wrote nothing."))
        return
    pick = URL.read("dec_bhyp", choices=range(len(chosen)))
    left, right = st.columns([3, 1])
    left.selectbox(
        _("Hypothesis"),
        list(range(len(chosen))),
        key="dec_bhyp",
        format_func=lambda i: _("{text}  (score {score:.3f})").format(text=detok(chosen[i].tokens) or "∅",
                                                                      score=chosen[i].score),
    )  # fmt: skip
    path = trace.path(chosen[pick])
    alignment = trace.cross_alignment(path)  # (L, H, T, S)
    n_layers = alignment.shape[0]
    layer = URL.read("dec_blayer", n_layers - 1, range(n_layers))
    right.selectbox(
        _("Layer"), list(range(n_layers)), key="dec_blayer",
        format_func=lambda i: _("layer {i} (average of heads)").format(i=i),
    )  # fmt: skip
    URL.write(dec_bstep=step, dec_bhyp=pick, dec_blayer=layer)
    tokens = path[-1].tokens
    show(
        decoding_figs.alignment_heatmap(
            attention_figs.head_average(alignment[layer]),
            output_rows(tokens, trace.start_token),
            trace.source_tokens,
            _("Each row: the cross-attention that wrote that token, layer {layer}").format(layer=layer),
            gold=gold_alignment(session.card, session.check.text, detok(tokens)),
            max_height=max_height,
            max_width=max_width,
            tick_px=chart_text_px(),
        ),
        key="dec_beam_alignment",
    )
