"""Two steps of the Inside page's walk through one head: the softmax with and without 1/√d_k (step 5's comparison),
and every head of the layer put together and projected by W^O (step 7)."""

from __future__ import annotations

import streamlit as st

from i18n import N_, _
from model.analysis import inside
from ui.shell.presentation import show
from viz import inside_figs as figs


def scale_comparison(step, k_tokens, where: str, no_scale: bool, keys: slice | None = None) -> None:
    """The toggle (in_noscale) and the weights of the query's row with (and, toggled, without) the scale, their
    entropies side by side. step: the page's inside.step_from_capture; where: the charts' words for the head;
    keys: the keys drawn (a window of a long input; the entropies are the whole row's)."""
    keys = keys or slice(0, len(k_tokens))
    st.toggle(
        _("Compare: without 1/√d_k") if step.scaled_scores else _("Compare: with 1/√d_k"),
        key="in_noscale",
        help=_("The same scores without the division by √d_k: the paper's reason for the scale."),
    )
    show(
        figs.weights_row(
            step.weights[keys],
            k_tokens[keys],
            step.weights_unscaled[keys] if no_scale else None,
            _("Attention weights: {where}").format(where=where),
            keys.start,
        ),
        key="in_weights",
    )
    m1, m2, m3 = st.columns(3)
    bits = _("{x} bits")
    m1.metric(_("Entropy with 1/√d_k"), bits.format(x=f"{step.entropy:.2f}"))
    m2.metric(
        _("Entropy without it"),
        bits.format(x=f"{step.entropy_unscaled:.2f}"),
        bits.format(x=f"{step.entropy_unscaled - step.entropy:+.2f}"),
        delta_color="off",
    )
    m3.metric(_("Largest weight with → without"), f"{step.weights.max():.2f} → {step.weights_unscaled.max():.2f}")
    if no_scale:
        st.caption(
            _(
                "Lower entropy means a sharper row: without the scale, softmax puts more weight on fewer keys and its "
                "gradients for the others shrink towards 0 — why the paper divides by √d_k."
            )
        )


def all_heads(
    model, cap, kind: str, layer: int, head: int, query: int, n_heads: int, d_k: int, kind_title: str, q_shown: str
) -> None:
    """Step 7: the layer's heads' outputs for this query side by side (head `head` framed), then W^O; W^O itself in
    an expander. q_shown: the query as chart titles name it."""
    st.subheader(_("7 · All heads together, then W^O"))
    w_o, b_o = inside.output_projection(model, kind, layer)
    out = inside.output_step(cap.head_outputs[kind][layer], w_o, b_o, query)
    st.markdown(
        _(
            "The {H} heads' outputs for this query are put side by side ({H} × {d_k} = {D} dimensions; "
            "head {head}, the one above, is framed) and projected by W^O: the layer's attention output for this token."
        ).format(H=n_heads, d_k=d_k, D=out.concat.shape[0], head=head)
    )
    st.latex(r"\operatorname{MultiHead}(Q, K, V) = \operatorname{Concat}(\text{head}_1, \dots, \text{head}_h)\, W^O")
    show(
        figs.concat_and_output(
            out.concat, out.output, n_heads, head, _("Concatenation and W^O, query {query}").format(query=q_shown)
        ),
        key="in_concat",
    )
    with st.expander(_("W^O of this layer")):
        if w_o.shape[0] <= 256:
            show(
                figs.matrix(
                    w_o,
                    _("W^O, {kind} layer {layer} ({rows} × {cols})").format(
                        kind=kind_title, layer=layer, rows=w_o.shape[0], cols=w_o.shape[1]
                    ),
                ),
                key="in_wo",
            )
        else:
            st.caption(
                _("W^O is {rows} × {cols}: too large to draw here; it is in the model's weights.").format(
                    rows=w_o.shape[0], cols=w_o.shape[1]
                )
            )


# A model's own divisor of the scores in step 3, beside the paper's √d_k
LAYER_SCALE = N_(
    "This model divides layer {layer}'s scores by {scale}, not by √d_k alone: each layer i also divides "
    "by i + 1 (GPT-2's scale_attn_by_inverse_layer_idx)."
)
GEMMA_SCALE = N_("This model divides by {scale} (√query_pre_attn_scalar), not by √d_k.")


def family_steps(step, k_tokens, where: str, config, layer: int) -> None:
    """What a model changes in steps 3-4 beyond the paper: its scale (Gemma's √query_pre_attn_scalar instead of
    √d_k; GPT-2's scale_attn_by_inverse_layer_idx, √d_k times the layer's number + 1), the soft-capping of the scaled
    scores (Gemma 2) with the capped scores beside them, and a local layer's sliding window (the keys it leaves out are
    masked, not weighted 0 by the softmax)."""
    if step.divisor is not None and config.scale_by_layer:
        st.caption(_(LAYER_SCALE).format(layer=layer, scale=f"{step.scale:.3g}"))
    elif step.divisor is not None:
        st.caption(_(GEMMA_SCALE).format(scale=f"{step.scale:.3g}"))
    if step.capped is not None:
        st.markdown(
            _(
                "**Soft-capping**: the scaled scores pass through c · tanh(s̃ / c) with c = {cap}, so none goes past "
                "±{cap} (Gemma 2's attention logit soft-capping)."
            ).format(cap=f"{step.softcap:g}")
        )
        st.latex(r"\hat s_j = c \tanh\!\left(\tilde s_j / c\right)")
        show(
            figs.scores(step.scaled, step.capped, step.allowed, k_tokens, _("Scaled and soft-capped scores: {where}")
                        .format(where=where), names=(_("scaled"), _("soft-capped"))),
            key="in_capped",
        )  # fmt: skip
    if step.window is not None:
        st.markdown(
            _(
                "**A local layer**: this layer sees only the last {w} positions (its sliding window); keys further "
                "back are masked (−∞), not attended with weight 0 by choice."
            ).format(w=step.window)
        )
