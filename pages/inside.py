"""Inside attention: one head's computation with the real numbers of the current input, in the order of the formula."""

import math

import streamlit as st

from i18n import N_, _
from model.analysis import inside
from model.analysis.export import qkv_npz
from ui.serving import caches
from ui.shell.figure_download import download_file
from ui.shell.presentation import show
from ui.shell.safe_text import esc
from ui.shell.session import require_session
from ui.shell.shapes import capture_caption, kind_radio, kv_note, words
from ui.shell.url_state import Key, Keys, flag
from ui.views import positional_views
from ui.views.attention_long import key_window, parse_range, range_text
from ui.views.inside_sections import all_heads, family_steps, scale_comparison
from ui.views.inside_shapes import shapes_section, write_shapes_url
from viz import inside_figs as figs
from viz import pe_kinds_figs
from viz.attention_figs import KIND_TITLES, layer_names
from viz.tokens import capture_rows, display_token, plain_token

URL = Keys(
    Key("in_kind", "cross", choices=tuple(inside.KINDS)),
    *(Key(name, 0, cast=int) for name in ("in_layer", "in_head", "in_query", "in_key")),  # choices: this capture's
    Key("in_noscale", False, cast=flag, encode=lambda v: "1" if v else None),
    Key("in_k", cast=parse_range, encode=range_text, resets="input", what=N_("the window's keys")),  # long inputs
)
st.title(_("Inside attention"))
st.markdown(
    _(
        "Attention(Q, K, V) = softmax(QKᵀ / √d_k) V, computed for **one head and one query** with the numbers "
        "of your input: pick them below and follow the formula from top to bottom."
    )
)
session = require_session()


cap = caches.session_qkv_capture(session)
TOKENS = {
    "encoder_self": (cap.source_tokens, cap.source_tokens),
    "decoder_self": (cap.target_tokens, cap.target_tokens),
    "cross": (cap.target_tokens, cap.source_tokens),
}
TOP_PX = 320  # where the first chart starts in presentation mode at 1366x768 (measured): it fits below

# -- the selection (every value also in the URL) ---------------------------------------------------
KINDS = [k for k in inside.KINDS if k in cap.qkv]  # the kinds this model's shape has
kind = URL.read("in_kind", choices=KINDS)
q_tokens, k_tokens = TOKENS[kind]
q_rows = capture_rows(cap, kind)  # how the query rows are named: "<s> → la", the input and the token it writes
L, H = cap.qkv[kind][0].shape[:2]
# One row of controls, as on the attention page: the first chart starts high enough for a projector's screen.
c1, c2, c3, c4 = st.columns([4.2, 1, 1, 1.4], vertical_alignment="center")
kind_radio(c1, KINDS, "in_kind")
focus = inside.default_focus(getattr(cap, kind))  # the most spread-out row: its scaling lesson is not 0 bits
layer = URL.read("in_layer", focus[0], choices=range(L))
c2.selectbox(
    _("Layer"),
    list(range(L)),
    key="in_layer",
    format_func=layer_names(L, cap.windows.get(kind)).__getitem__,  # a local layer's window named (Mistral, Gemma)
    label_visibility="collapsed",
)
head = URL.read("in_head", focus[1], choices=range(H))
c3.selectbox(
    _("Head"),
    list(range(H)),
    key="in_head",
    format_func=lambda h: _("head {h}").format(h=h),
    label_visibility="collapsed",
)
query = URL.read("in_query", focus[2], choices=range(len(q_tokens)))
c4.selectbox(
    _("Query token"),
    list(range(len(q_tokens))),
    key="in_query",
    format_func=lambda i: f"{i}: {q_rows.text(i)}",
    label_visibility="collapsed",
)
kv_note(session.model.config, head)
step = inside.step_from_capture(
    cap, kind, layer, head, query, **inside.head_settings(session.model.config, kind, layer)
)
q_label, q_shown = f"{query}: {q_rows.text(query)}", f"{query}: {q_rows.hover(query)}"
kind_title = _(KIND_TITLES[kind])
where = _("{kind}, layer {layer}, head {head}, query {query}").format(
    kind=kind_title, layer=layer, head=head, query=q_shown
)  # for chart titles (plotly reads HTML)
st.caption(
    _("{kind}, layer {layer}, head {head}, query {query}").format(
        kind=kind_title, layer=layer, head=head, query=esc(q_label)
    )
    + f" · d_k = {step.d_k} · "
    + _("{n} keys").format(n=len(k_tokens))
    + " · "
    + (  # what the model read: its one sequence (decoder-only, encoder-only), or an encoder-decoder's decoder input
        capture_caption(cap, session.tokenizer, session.check.text)
        or _("decoder input: {origin}").format(
            origin=_("the model’s own greedy output") if cap.generated else _("the target you typed")
        )
    )
)

keys = key_window(URL, "in_k", len(k_tokens))  # every key, or a window of at most 256 of a long input
k_shown = k_tokens[keys]
# -- 1. queries and keys ---------------------------------------------------------------------------
st.subheader(_("1 · Query and keys"))
show(
    figs.query_keys(
        step.query,
        step.keys[keys],
        q_tokens[query],
        k_shown,
        _("Query and keys: {where}").format(where=where),
        start=keys.start,
    ),  # fmt: skip
    key="in_qk",
    top_px=TOP_PX,
)
query_side, key_side = words(session.model.config).sides[kind]  # where this kind's queries and keys come from
st.markdown(
    _(
        "Each token's vector is multiplied by the learned matrices W^Q and W^K; the head keeps its d_k "
        "dimensions. The query comes from the **{query_side}**, the keys from the **{key_side}**."
    ).format(query_side=_(query_side), key_side=_(key_side))
)
st.latex(r"q = x_{\text{query}} W^Q_h,\qquad k_j = x_j W^K_h,\qquad v_j = x_j W^V_h \in \mathbb{R}^{d_k}")

# -- 2. raw scores and what drives them ------------------------------------------------------------
st.subheader(_("2 · Raw scores"))
st.markdown(_("How well the query matches each key: the dot product, a sum over the d_k dimensions."))
st.latex(r"s_j = q \cdot k_j = \sum_{i=1}^{d_k} q_i\, k_{j,i}")
show(figs.scores(step.raw[keys], None, step.allowed[keys], k_shown, _("Raw scores q·k_j"), keys.start), key="in_raw")
key = URL.read("in_key", keys.start + int(step.weights[keys].argmax()), range(keys.start, keys.stop))
st.selectbox(
    _("Key for the elementwise products"),
    list(range(keys.start, keys.stop)),
    key="in_key",
    format_func=lambda j: f"{j}: {plain_token(k_tokens[j])}",
)
st.markdown(_("Like bertviz's neuron view: the products q_i · k_i of one key show which dimensions make its score."))
show(figs.products(step.products(key), f"{key}: {display_token(k_tokens[key])}"), key="in_products")

# -- 3. scaled scores ------------------------------------------------------------------------------
st.subheader(_("3 · Scaled scores"))
if step.scaled_scores:
    st.markdown(
        _(
            "Dot products of d_k = {d_k} terms grow like √d_k, so they are divided by √d_k = {scale} "
            "before the softmax, which would otherwise saturate."
        ).format(d_k=step.d_k, scale=f"{math.sqrt(step.d_k):.3g}")  # the paper's; a model's own: family_steps
    )
    st.latex(r"\tilde s_j = \frac{q \cdot k_j}{\sqrt{d_k}}")
else:  # T5
    st.info(_("This model does not divide by √d_k (T5: its initialisation absorbs the scale): s̃_j = q · k_j."))
scaled = step.scaled if step.scaled_scores else None  # T5: only the raw scores, which the softmax reads
show(figs.scores(step.raw[keys], None if scaled is None else scaled[keys], step.allowed[keys], k_shown,
                 _("Raw and scaled scores"), keys.start), key="in_scaled")  # fmt: skip
if step.bias is not None:  # ALiBi, T5: the positional bias joins the scores here
    st.markdown(_("This model's positions are a bias on the scores: b_j is added to each scaled score."))
    show(
        pe_kinds_figs.score_bias(
            step.scaled[keys], step.bias[keys], k_shown, _("Scaled scores plus the positional bias")
        ),
        key="in_bias",
    )
elif note := getattr(positional_views.of(session.model.config.positional), "INSIDE_NOTE", None):
    st.caption(_(note))  # RoPE: the kind's own line (ui/views/positional_views/)

family_steps(step, k_tokens, where, session.model.config, layer)  # its own scale, soft-capping, a local window

# -- 4. mask ---------------------------------------------------------------------------------------
st.subheader(_("4 · Mask"))
if kind == "decoder_self":
    st.markdown(
        _(
            "The decoder may not look ahead: keys after position {query} get −∞, so their weight will be exactly 0."
        ).format(query=query)
    )
else:
    st.markdown(_("Every key of this input may be seen (no padding): the mask adds 0 everywhere."))
st.latex(
    r"m_j = \begin{cases} 0 & \text{"
    + _("key {j} visible").replace("{j}", "} j \\text{")
    + r"} \\ -\infty & \text{"
    + _("key {j} hidden (after the query in the decoder)").replace("{j}", "} j \\text{")
    + r"} \end{cases}"
)
show(figs.mask_row(step.allowed[keys], k_shown, _("Mask added to the scaled scores"), keys.start), key="in_mask")

# -- 5. softmax, and the scale control ------------------------------------------------------------
st.subheader(_("5 · Softmax: the attention weights"))
st.markdown(
    _(
        "The softmax turns the scores into weights that are positive and sum to 1: the same row as on the Attention page."
    )
)
st.latex(
    r"a_j = \operatorname{softmax}_j(\tilde s + m) = \frac{e^{\tilde s_j + m_j}}{\sum_{j'} e^{\tilde s_{j'} + m_{j'}}}"
)
no_scale = URL.read("in_noscale")
scale_comparison(step, k_tokens, where, no_scale, keys)

# -- 6. values and weighted sum --------------------------------------------------------------------
st.subheader(_("6 · Values and their weighted sum"))
st.markdown(_("The head's output for this query mixes the value vectors in the proportions of the weights."))
st.latex(r"\text{head}_h = \sum_j a_j\, v_j")
show(
    figs.values_and_output(
        step.values[keys], step.weights[keys], step.output, k_shown, _("Values and this head's output"), keys.start
    ),  # fmt: skip
    key="in_values",
)

# -- 7. all heads, W^O ----------------------------------------------------------------------------
all_heads(session.model, cap, kind, layer, head, query, H, step.d_k, kind_title, q_shown)

# -- shapes with your own numbers -----------------------------------------------------------------
shapes_section(session.model.config, kind_title, len(q_tokens), len(k_tokens))
URL.write(
    in_kind=kind,
    in_layer=layer,
    in_head=head,
    in_query=query,
    in_key=key,
    in_k=None if keys == slice(0, len(k_tokens)) else (keys.start, keys.stop - 1),
    in_noscale=no_scale,
)
write_shapes_url()

# -- downloads -------------------------------------------------------------------------------------
st.subheader(_("Downloads"))
download_file(
    st, _("Download Q, K, V of every layer and head (.npz)"), lambda: qkv_npz(cap), "qkv.npz", "in_dl_qkv"
)  # packed when pressed
caches.capture_downloads(session, "inside")
