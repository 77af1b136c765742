"""Model page: configuration, where the parameters are, weight statistics, and attention's tensor shapes."""

import streamlit as st

from i18n import N_, _
from model.analysis.inspect import attention_shape_walk, parameter_counts, weight_stats
from model.network.position_kinds.registry import kind
from tasks.cards import card_description, machine_text, measured_lines
from ui.serving import caches
from ui.shell.explain import explain_row
from ui.shell.navigation import view_menu
from ui.shell.presentation import SCREEN_PX, presenting, show
from ui.shell.safe_text import esc, md
from ui.shell.session import require_session, show_input_messages
from ui.shell.shapes import kinds_of, words
from ui.shell.url_state import Key, Keys
from viz import model_figs as figs

st.title(_("Model"))
session = require_session(valid_input=False)


@st.cache_data(max_entries=8, show_spinner=False)
def _weights(model_key: str, _model) -> tuple[dict, list]:
    """Parameter counts and weight statistics, once per model (8 models at most; a few KB each)."""
    return parameter_counts(_model), weight_stats(_model)


# where each view's first table or chart starts at 1366x768 in presentation mode (measured): it ends on that screen
TABLE_TOP_PX = {"config": 360, "weights": 400, "shapes": 400}


def table_height(top: int) -> int | str:
    """A table's height: in presentation mode what is left of a 768 px screen below `top` (it scrolls inside)."""
    return SCREEN_PX - 24 - top if presenting() else "auto"


cfg = session.model.config
counts, stats = _weights(session.key, session.model)
st.markdown(
    _("**{label}** · {n} parameters · {norm} · {positions}").format(
        label=esc(session.label),
        n=f"{sum(counts.values()):,}",
        norm="pre-LN" if cfg.norm_first else _("post-LN (as in the paper)"),
        positions=_(kind(cfg.positional).DESCRIPTION),
    )
)
card = session.card
if card:
    lines = [_(card_description(card))]
    if "held_out_exact_match" in card:
        lines.append(
            _("Exact match on {n} fresh examples: **{share}**").format(
                n=card.get("held_out_examples", _("held-out")), share=f"{card['held_out_exact_match']:.1%}"
            )
        )
    if "training_seconds" in card:
        lines.append(
            _("Trained in {minutes} min ({steps} steps) on {machine}").format(
                minutes=f"{card['training_seconds'] / 60:.1f}",
                steps=card.get("steps", "?"),
                machine=md(machine_text(card["trained_on"])) if "trained_on" in card else _("a CPU"),
            )
        )
    lines += [md(line) for line in measured_lines(card)]
    st.markdown("  \n".join(line for line in lines if line))
    if "command" in card and not presenting():  # a hall reads the model, not how to retrain it
        st.code(card["command"], language="bash")

# One view at a time (st.tabs would build all four on every run); the choice is in the URL.
VIEWS = {
    "config": N_("Configuration"),
    "params": N_("Parameters"),
    "weights": N_("Weights"),
    "shapes": N_("Shapes in attention"),
}
PARTS = [N_("all"), N_("encoder"), N_("decoder"), N_("embeddings and generator")]  # values in the URL: English
SHAPE_KINDS = [N_("encoder self"), N_("decoder self"), N_("cross")]  # values in the URL: English
ONE_SEQUENCE_SIZES = N_(
    "For the current input: n = {n} tokens ({what}), d_model = {d}, h = {h} heads, d_k = d_model / h = {d_k}."
)
URL = Keys(
    Key("model_view", "config", choices=tuple(VIEWS)),
    Key("model_part", PARTS[0], choices=PARTS),
    Key("model_shape_kind", SHAPE_KINDS[0], choices=SHAPE_KINDS),
)
# only the stacks the model has (a decoder-only model has no encoder and no cross-attention)
parts = [p for p in PARTS if {"encoder": cfg.has_encoder, "decoder": cfg.has_decoder}.get(p, True)]
shape_kinds = [k for k in SHAPE_KINDS if k in kinds_of(cfg)]
view = URL.read("model_view")
view_menu(VIEWS, "model_view")
URL.write(model_view=view)
if view == "config":
    rows = [{_("field"): k, _("value"): str(v)} for k, v in cfg.to_dict().items() if k != "extra"]
    st.dataframe(rows, hide_index=True, width="stretch", height=table_height(TABLE_TOP_PX["config"]))
elif view == "params":
    show(figs.parameter_bars(counts), key="model_params")
elif view == "weights":
    part = URL.read("model_part", choices=parts)
    st.columns(3)[0].selectbox(_("Part"), parts, key="model_part", format_func=_, label_visibility="collapsed")
    URL.write(model_part=part)
    keep = [
        s
        for s in stats
        if part == "all"
        or s.name.startswith(part)
        or (part == "embeddings and generator" and not s.name.startswith(("encoder", "decoder")))
    ]
    show(
        figs.weight_spread([s.name for s in keep], [s.std for s in keep], [s.max_abs for s in keep]),
        key="model_weights",
        top_px=TABLE_TOP_PX["weights"],  # below the model card and the part
    )
    st.dataframe(
        [
            {_("tensor"): s.name, _("shape"): str(s.shape), _("mean"): s.mean, _("std"): s.std, "max |w|": s.max_abs}
            for s in keep
        ],
        hide_index=True,
        width="stretch",
    )
elif session.ok:  # what is wrong with the input, if anything, is named below
    cap = caches.session_capture(session)
    S, T = len(cap.source_tokens), len(cap.target_tokens)
    which = URL.read("model_shape_kind", shape_kinds[0], shape_kinds)
    if len(shape_kinds) > 1:
        st.radio(_("Attention"), shape_kinds, horizontal=True, key="model_shape_kind", format_func=_)
    URL.write(model_shape_kind=which)
    n_q, n_k = {"encoder self": (S, S), "decoder self": (T, T), "cross": (T, S)}[which]
    if cfg.has_encoder and cfg.has_decoder:
        sizes = _(
            "For the current input: S = {S} source tokens, T = {T} decoder tokens, d_model = {d}, "
            "h = {h} heads, d_k = d_model / h = {d_k}."
        ).format(S=S, T=T, d=cfg.d_model, h=cfg.n_heads, d_k=cfg.d_head)
    else:  # one sequence: the prompt and its continuation, or the encoded text
        sizes = _(ONE_SEQUENCE_SIZES).format(
            what=_(words(cfg).sequence), n=n_q, d=cfg.d_model, h=cfg.n_heads, d_k=cfg.d_head
        )
    st.markdown(sizes)
    walk = attention_shape_walk(cfg.d_model, cfg.n_heads, n_q, n_k, d_head=cfg.d_head)
    st.dataframe(
        [{_("step"): _(s.what), _("formula"): _(s.formula), _("shape"): " × ".join(map(str, s.shape))} for s in walk],
        hide_index=True,
        width="stretch",
        height=table_height(TABLE_TOP_PX["shapes"]),
    )
explain_row("post_ln", "heads", "specials", config=cfg)
if show_input_messages(session):  # names what is wrong with the input
    caches.capture_downloads(session, "model")  # made only when pressed
