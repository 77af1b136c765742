"""Three views of the positional page: rotary positions (RoPE), ALiBi and T5's relative bias.

Each answers the questions the sinusoid views answer: how position enters, at which frequencies or slopes, and that
attention sees only the distance i - j. When the loaded model uses the kind, the view uses its sizes (and, for T5's
bias, its learned table); otherwise the controls (d, base, heads) describe an example. URL: pe_pair, pe_heads.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from i18n import N_, _
from model.network import pe_kinds
from ui.shell.presentation import chart_box, show
from ui.shell.url_state import Key, Keys
from viz import pe_kinds_figs as figs
from viz import positional_figs

URL = Keys(Key("pe_pair", 0, cast=int), Key("pe_heads", 8, choices=range(1, 17), cast=int))  # pe_pair: the RoPE pairs

LAYOUTS = {  # pe_layout as the caption says it (marked only; the URL and config keep the English key)
    "interleaved": N_("interleaved: dimensions 2i and 2i+1"),
    "half": N_("in halves: dimensions i and i + d/2"),
}
ROPE_CHECK_POSITIONS = 64  # positions of the numerical check of q_m . k_n (a 64 x 64 matrix)
ALIBI_POSITIONS = 24  # positions of the bias maps (the reverse demos read at most 25 tokens)
RELATIVE_RANGE = 160  # relative positions -160..160: past T5's max distance of 128


def _uses(session, kind: str):
    """The loaded model's config when its positions are `kind`, else None."""
    if session is not None and session.model.config.positional == kind:
        return session.model.config
    return None


def rope_view(session, d_model: int, base: float) -> None:
    cfg = _uses(session, "rope")
    d = cfg.d_head if cfg else d_model
    base = cfg.pe_base if cfg else base
    layout = cfg.pe_layout if cfg else "interleaved"
    if cfg:
        st.caption(
            _("This model uses RoPE: each head's {d} dimensions, base {base}, pairs {layout}.").format(
                d=d, base=f"{base:g}", layout=_(LAYOUTS.get(layout, layout))
            )
        )
    else:
        st.caption(_("An example: d = {d} (the width of one head), base {base}.").format(d=d, base=f"{base:g}"))
    theta = pe_kinds.rope_frequencies(d, base)
    pair = URL.read("pe_pair", choices=range(len(theta)))
    if len(theta) > 1:
        st.slider(_("Pair i"), 0, len(theta) - 1, key="pe_pair")
    URL.write(pe_pair=pair)
    rng = np.random.default_rng(pair)
    q, k = rng.standard_normal(2), rng.standard_normal(2)
    positions = np.arange(12)
    height = min(400, chart_box()[0] - 60)
    left, right = st.columns(2)
    show(
        figs.rope_rotation(pe_kinds.rope_pair_path(q, positions, theta[pair]),
                           pe_kinds.rope_pair_path(k, positions, theta[pair]), pair, theta[pair], height,
                           dims=(pair, pair + d // 2) if layout == "half" else None),
        key="pe_rope_rotation", where=left)  # fmt: skip
    show(figs.rope_frequencies(theta, height, layout), key="pe_rope_freq", where=right)
    # the explanation under the first charts: on a projector they are whole on the first screen
    st.markdown(
        _(
            "RoPE adds nothing to the embeddings. In every self-attention layer it turns each pair of query and key "
            "dimensions by the angle m·θᵢ of its position m, after the projections W^Q, W^K. A dot product of two "
            "turned vectors depends on the difference of their angles only: q_m·k_n is a function of m − n."
        )
    )
    st.latex(r"q_m\cdot k_n=\operatorname{Re}\sum_i q^{(i)}\,\overline{k^{(i)}}\,e^{\,i(m-n)\theta_i},\quad"
             r"\theta_i=\mathrm{base}^{-2i/d}")  # fmt: skip
    check = pe_kinds.rope_check(d, ROPE_CHECK_POSITIONS, base, layout)
    st.metric(
        _("largest spread of q_m·k_n along a diagonal m − n = const, {n} positions").format(n=check.positions),
        f"{check.max_spread:.1e}",
    )
    left, right = st.columns(2)
    show(
        positional_figs.similarity_matrix(check.scores, _("q_m·k_n for one random q and k"), "q·k", height),
        key="pe_rope_scores",
        where=left,
    )
    dist, same, bound = pe_kinds.rope_decay(d, 256, base)
    show(figs.rope_decay(dist, same, bound, height), key="pe_rope_decay", where=right)
    st.caption(
        _(
            "Bands parallel to the diagonal: the score depends on m − n only (the spread above is float rounding). "
            "The decay is Su et al.'s argument that far tokens weigh less; it holds for similar q and k, not for any."
        )
    )


def alibi_view(session) -> None:
    cfg = _uses(session, "alibi")
    heads = URL.read("pe_heads", cfg.n_heads if cfg else 8)
    if cfg:
        st.session_state["pe_heads"] = heads = cfg.n_heads
        st.caption(_("This model uses ALiBi with {h} heads.").format(h=heads))
    else:
        st.slider(_("Heads"), 1, 16, key="pe_heads")
    URL.write(pe_heads=heads)
    st.markdown(
        _(
            "ALiBi adds no positions to the embeddings: each head h adds −m_h·|i − j| to its scores, a penalty growing "
            "with distance, steep for some heads (local) and gentle for others. The paper's decoder is causal "
            "(distance i − j); this encoder uses the same penalty in both directions, |i − j|. None in cross-attention."
        )
    )
    slopes, bias = pe_kinds.alibi_matrix(heads, ALIBI_POSITIONS)
    shown = min(heads, 8)
    show(
        figs.head_maps(bias[:shown], [_("head {h}<br>slope {m:.3g}").format(h=h, m=slopes[h]) for h in range(shown)],
                       _("bias"), min(340, chart_box()[0] - 100), _("ALiBi: −slope × |i − j| added to each head's scores "
                       "(query i down, key j across)")),
        key="pe_alibi_maps",
    )  # fmt: skip
    if shown < heads:
        st.caption(_("First {n} heads shown, on one colour range.").format(n=shown))
    show(figs.alibi_slopes(slopes, min(300, chart_box()[0] - 120)), key="pe_alibi_slopes")
    if heads & (heads - 1):
        st.caption(
            _("{h} is not a power of 2: as the paper's code, the slopes of the nearest smaller power of 2 come first, "
              "then every other slope of twice as many heads.").format(h=heads)
        )  # fmt: skip


def relative_view(session, demo_model) -> None:
    """demo_model: the shipped reverse model with T5's bias (or None), shown when the loaded model has no such bias."""
    cfg = _uses(session, "relative")
    buckets, distance = (cfg.relative_buckets, cfg.relative_max_distance) if cfg else (32, 128)
    st.markdown(
        _(
            "T5 learns one number per head for each bucket of relative position (key − query) and adds it to the "
            "scores of every self-attention layer of the stack. Near distances get a bucket each; far ones share "
            "log-spaced buckets, and everything beyond the maximum distance shares the last. None in cross-attention."
        )
    )
    rel, enc = pe_kinds.relative_buckets(RELATIVE_RANGE, True, buckets, distance)
    dec = pe_kinds.relative_buckets(RELATIVE_RANGE, False, buckets, distance)[1]
    height = min(380, chart_box()[0] - 60)
    show(figs.relative_buckets(rel, enc, dec, buckets // 4, height, buckets // 2), key="pe_rel_buckets")
    st.caption(_("{b} buckets, maximum distance {m}.").format(b=buckets, m=distance))
    model = session.model if cfg else demo_model
    if model is None:
        st.info(_("Load a model with T5's relative bias to see its learned bias per head."))
        return
    source = _("this model") if cfg else _("the reverse demo with T5's bias")
    curves = pe_kinds.relative_bias_curves(model, 40)
    columns = st.columns(len(curves))
    for column, (side, (r, values)) in zip(columns, curves.items()):
        title = _("Encoder: learned bias of {model}") if side == "source" else _("Decoder: learned bias of {model}")
        show(figs.relative_bias(r, values, title.format(model=source), height), key=f"pe_rel_{side}", where=column)
