"""Model page: configuration, where the parameters are, weight statistics, and attention's tensor shapes."""

import streamlit as st

from model.inspect import attention_shape_walk, parameter_counts, weight_stats
from pages import common
from pages.explain import explain_row
from viz import model_figs as figs

st.title("Model")
session = common.require_session(valid_input=False)


@st.cache_data(max_entries=8, show_spinner=False)
def _weights(model_key: str, _model) -> tuple[dict, list]:
    """Parameter counts and weight statistics, once per model (8 models at most; a few KB each)."""
    return parameter_counts(_model), weight_stats(_model)


cfg = session.model.config
counts, stats = _weights(session.key, session.model)
st.markdown(
    f"**{session.label}** · {sum(counts.values()):,} parameters · "
    f"{'pre-LN' if cfg.norm_first else 'post-LN (as in the paper)'} · {cfg.positional} positions"
)
card = session.card
if card:
    lines = [card.get("description", "")]
    if "held_out_exact_match" in card:
        lines.append(
            f"Exact match on {card.get('held_out_examples', 'held-out')} fresh examples: "
            f"**{card['held_out_exact_match']:.1%}**"
        )
    if "training_seconds" in card:
        lines.append(
            f"Trained in {card['training_seconds'] / 60:.1f} min ({card.get('steps', '?')} steps) on "
            f"{card.get('trained_on', 'a CPU')}"
        )
    st.markdown("  \n".join(line for line in lines if line))
    if "command" in card:
        st.code(card["command"], language="bash")

# One view at a time (st.tabs would build all four on every run); the choice is in the URL.
VIEWS = {"config": "Configuration", "params": "Parameters", "weights": "Weights", "shapes": "Shapes in attention"}
view = common.url_state("model_view", "config", list(VIEWS))
st.segmented_control(
    "View", list(VIEWS), key="model_view", format_func=VIEWS.get, required=True, label_visibility="collapsed"
)
common.write_url(model_view=view)
if view == "config":
    rows = [{"field": k, "value": str(v)} for k, v in cfg.to_dict().items() if k != "extra"]
    st.dataframe(rows, hide_index=True, width="stretch")
elif view == "params":
    st.plotly_chart(figs.parameter_bars(counts), key="model_params")
elif view == "weights":
    PARTS = ["all", "encoder", "decoder", "embeddings and generator"]
    part = common.url_state("model_part", PARTS[0], PARTS)
    st.selectbox("Part", PARTS, key="model_part")
    common.write_url(model_part=part)
    keep = [
        s
        for s in stats
        if part == "all"
        or s.name.startswith(part)
        or (part == "embeddings and generator" and not s.name.startswith(("encoder", "decoder")))
    ]
    st.plotly_chart(
        figs.weight_spread([s.name for s in keep], [s.std for s in keep], [s.max_abs for s in keep]),
        key="model_weights",
    )
    st.dataframe(
        [{"tensor": s.name, "shape": str(s.shape), "mean": s.mean, "std": s.std, "max |w|": s.max_abs} for s in keep],
        hide_index=True,
        width="stretch",
    )
elif session.ok:  # what is wrong with the input, if anything, is named below
    cap = common.session_capture(session)
    S, T = len(cap.source_tokens), len(cap.target_tokens)
    SHAPE_KINDS = ["encoder self", "decoder self", "cross"]
    which = common.url_state("model_shape_kind", SHAPE_KINDS[0], SHAPE_KINDS)
    st.radio("Attention", SHAPE_KINDS, horizontal=True, key="model_shape_kind")
    common.write_url(model_shape_kind=which)
    n_q, n_k = {"encoder self": (S, S), "decoder self": (T, T), "cross": (T, S)}[which]
    st.markdown(
        f"For the current input: S = {S} source tokens, T = {T} decoder tokens, d_model = {cfg.d_model}, "
        f"h = {cfg.n_heads} heads, d_k = d_model / h = {cfg.d_head}."
    )
    walk = attention_shape_walk(cfg.d_model, cfg.n_heads, n_q, n_k)
    st.dataframe(
        [{"step": s.what, "formula": s.formula, "shape": " × ".join(map(str, s.shape))} for s in walk],
        hide_index=True,
        width="stretch",
    )
explain_row("post_ln", "heads", "specials")
if common.show_input_messages(session):  # names what is wrong with the input
    common.capture_downloads(session, "model")  # made only when pressed
