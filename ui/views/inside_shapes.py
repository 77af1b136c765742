"""The Inside page's "Shapes with your own numbers": the shapes and costs of attention for a batch, length, d_model and
number of heads typed in (each kept in the URL), beside those of this input and model."""

from __future__ import annotations

import streamlit as st

from i18n import _, message_of
from model.analysis import inside
from model.analysis.inspect import attention_shape_walk
from ui.shell.presentation import show
from ui.shell.safe_text import md
from ui.shell.url_state import Key, Keys, between
from viz import inside_figs as figs

DEFAULTS = {"in_batch": 32, "in_len": 512, "in_d": 768, "in_h": 12}
LIMITS = {"in_batch": "batch", "in_len": "length", "in_d": "d_model", "in_h": "heads"}
URL = Keys(*(Key(n, d, cast=int, ok=between(1, inside.COST_LIMITS[LIMITS[n]])) for n, d in DEFAULTS.items()))


def shapes_section(cfg, kind_title: str, n_q: int, n_k: int) -> None:
    """The section: the numbers typed in, their shapes and costs, then this input's (n_q queries x n_k keys, the
    model's configuration cfg)."""
    st.subheader(_("Shapes with your own numbers"))
    # One above the other, each the page's width: side by side, the step names were cut ("注意力权重（即热力图所…").
    mine, live = st.container(), st.container()
    with mine:
        cols = st.columns(4)
        for col, (name, label) in zip(
            cols, (("in_batch", _("Batch B")), ("in_len", _("Length T")), ("in_d", "d_model"), ("in_h", _("Heads h")))
        ):
            URL.read(name)
            col.number_input(label, 1, inside.COST_LIMITS[LIMITS[name]], step=1, key=name)
        B, T, D, heads = (st.session_state[n] for n in DEFAULTS)
        try:
            cost = inside.attention_cost(B, T, D, heads)
        except ValueError as err:
            st.error(md(message_of(err)))
            cost = None
        if cost is not None:
            rows = figs.shape_rows(attention_shape_walk(D, heads, T, T, batch=B))
            st.dataframe(rows, hide_index=True, width="stretch", height=36 * (len(rows) + 1))
            st.markdown(
                _(
                    "Attention weights B × h × T × T = **{n}** numbers, **{size}** at float32, per layer and kind of "
                    "attention. QKᵀ and weights·V: {score_flops} FLOPs; the four projections: {projection_flops}."
                ).format(
                    n=figs.format_count(cost.weight_elements),
                    size=figs.format_bytes(cost.weight_bytes),
                    score_flops=figs.format_count(cost.score_flops),
                    projection_flops=figs.format_count(cost.projection_flops),
                )
            )
            scaling = inside.length_scaling(B, T, D, heads)
            show(figs.length_cost([c.length for c in scaling], [c.weight_bytes for c in scaling], T), key="in_cost")
    with live:
        st.markdown(
            _(
                "**This input and model**: {kind}, B = 1, {n_q} queries × {n_k} keys, d_model = {d}, h = {h}, d_k = {d_k}."
            ).format(kind=kind_title, n_q=n_q, n_k=n_k, d=cfg.d_model, h=cfg.n_heads, d_k=cfg.d_head)
        )
        rows = figs.shape_rows(attention_shape_walk(cfg.d_model, cfg.n_heads, n_q, n_k, d_head=cfg.d_head))
        st.dataframe(rows, hide_index=True, width="stretch", height=36 * (len(rows) + 1))
        live_cost = inside.attention_cost(1, n_q, cfg.d_model, cfg.n_heads, n_keys=n_k, d_head=cfg.d_head)
        st.markdown(
            _("Attention weights of one layer: {h} × {n_q} × {n_k} = {n} numbers, {size}.").format(
                h=cfg.n_heads,
                n_q=n_q,
                n_k=n_k,
                n=f"{live_cost.weight_elements:,}",
                size=figs.format_bytes(live_cost.weight_bytes),
            )
        )


def write_shapes_url() -> None:
    """The numbers typed in, into the link."""
    URL.write(**{n: st.session_state[n] for n in DEFAULTS})
