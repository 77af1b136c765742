"""Compare two models on the same input: model A (the sidebar's) and model B side by side, and their difference.

Maps are subtracted only where they line up (model/analysis/compare.py): same layers and heads, same source tokens,
and for the decoder's kinds the same decoder input (by default both read model A's output). Otherwise the
page says why, and still shows both.
"""

import html

import streamlit as st

from i18n import N_, _
from model.analysis.budget import WorkBudget, compare_page_bytes
from model.analysis.budget_input import apply_budget
from model.analysis.compare import KINDS, attention_map, decoder_input_text, mismatches
from model.decoding.strategy_export import comparison_json, comparison_npz
from model.text.inputs import check_text, prepare_sequence, text_room
from tasks.cards import card_description
from ui.serving import caches
from ui.shell import model_picker
from ui.shell.explain import explain
from ui.shell.figure_download import download_row
from ui.shell.presentation import chart_box, chart_text_px, presenting, show
from ui.shell.safe_text import esc, md
from ui.shell.session import require_session
from ui.shell.shapes import NO_KIND_IN_B, decoder_side, kind_radio, requires
from ui.shell.url_state import Key, Keys, intish, write_url
from ui.views.compare_models import SAME_AS_A, default_b, mismatch_message, same_tokens
from viz import attention_figs
from viz.compare_figs import compare_heatmaps
from viz.tokens import capture_rows

st.title(_("Compare two models"))
session = require_session()

SHORT = {"encoder_self": N_("Encoder self"), "decoder_self": N_("Decoder self (causal)"), "cross": N_("Cross")}
INPUTS = {"a": N_("A's output, for both"), "b": N_("B's output, for both"), "own": N_("each model's own output")}
URL = Keys(
    Key("cmp_kind", "cross", choices=tuple(KINDS)),
    Key("cmp_input", "a", choices=tuple(INPUTS), encode=lambda v: None if v == "a" else v),
    Key("cmp_layer", cast=int),  # default and choices: the layers both models have
    Key("cmp_head", "average", cast=intish),
)


cfg_a = session.model.config
if not presenting():  # a hall sees the two models named above the charts, not how to choose them
    st.caption(_("Model A is the sidebar's; choose model B here. Both read the sidebar's input."))
col_a, col_b = st.columns(2)
col_a.markdown(_("**A:** {label}").format(label=esc(session.label)))
if description := card_description(session.card):
    col_a.caption(_(description))  # a built-in task's sentence in the reader's language
start = default_b(session.key, session.tokenizer, (cfg_a.n_encoder_layers, cfg_a.n_decoder_layers, cfg_a.n_heads))
picked = model_picker.pick_model("model_b", where=col_b, default=start, label=N_("Model B"))
if picked is None:
    st.stop()
b_key, b_label, model_b, tok_b, card_b = picked
if b_key == session.key and not presenting():
    col_b.caption(_(SAME_AS_A))
write_url(  # model B's picker (model_picker) reads these
    model_b=None if b_key.startswith("upload:") else b_key.split("|", 1)[0],
    model_b_heads=st.session_state.get("model_b_heads") if "|heads=" in b_key else None,
)
text = session.check.text
check_b = check_text(text, tok_b.source, text_room(model_b.config))
# B's heads may cost more than A's: cut by the page's own cost (A's by the sidebar, with the same function)
apply_budget(check_b, tok_b.source, model_b.config, WorkBudget.from_environment(), cost=compare_page_bytes)
text_b = check_b.text  # what model B reads: the input, cut further when B's attention needs it

kinds = [k for k in KINDS if k in session.model.config.attention_kinds]  # what model A's shape has
kind = URL.read("cmp_kind", choices=kinds)  # one kind (decoder-only, encoder-only): each reads the input alone
left, mid, right = st.columns([3, 1, 1.3], vertical_alignment="center")
kind_radio(left, kinds, "cmp_kind", SHORT)
fed = URL.read("cmp_input")
choosing_input = kind != "encoder_self" and session.target is None
if choosing_input:
    side = decoder_side(session.model.config)
    st.radio(side[:1].upper() + side[1:], list(INPUTS), key="cmp_input", horizontal=True,
             format_func=lambda k: _(INPUTS[k]))  # fmt: skip


def written(cap, model, tok, read: str) -> str:
    """What a model wrote, for the other to read as its decoder input: an encoder-decoder's output, a decoder-only
    model's continuation after the prompt it read (the other reads the prompt itself)."""
    prompt = 0 if model.config.has_encoder else len(prepare_sequence(model, tok, read).ids)
    return decoder_input_text(cap, tok.target.detokenize, prompt)


SIDES = {"a": (session.key, text, session.model, session.tokenizer), "b": (b_key, text_b, model_b, tok_b)}


def capture(side: str, target):
    key, read, model, tok = SIDES[side]
    return caches.cached_capture(key, read, target, model, tok)


def reading(side: str, writer: str):
    """`side`'s capture with its decoder reading what the `writer` side's model wrote: the very ids when they name the
    same tokens in both vocabularies (same_tokens), else their text tokenized by `side`'s tokenizer."""
    (w_key, w_read, w_model, w_tok), (key, read, model, tok) = SIDES[writer], SIDES[side]
    ids = [i for i in caches.own_output(w_key, w_read, w_model, w_tok) if i != w_tok.target.eos_id]
    if same_tokens(ids, w_tok.target, tok.target, model.config.tgt_vocab_size):
        return caches.cached_reading(key, read, ids, model, tok)
    return capture(side, written(capture(writer, None), w_model, w_tok, w_read))


if check_b.errors:  # B cannot read the input at all: A alone, and why
    cap_a, cap_b = capture("a", session.target), None
else:
    typed = session.target
    if typed is not None or fed == "own" or kind == "encoder_self":
        cap_a, cap_b = capture("a", typed), capture("b", typed)
    elif fed == "a":
        cap_a, cap_b = capture("a", None), reading("b", "a")
    else:
        cap_a, cap_b = reading("a", "b"), capture("b", None)

w_a = getattr(cap_a, kind)  # (L, H, Tq, Tk)
w_b = getattr(cap_b, kind) if cap_b is not None else w_a
n_layers, n_heads = min(w_a.shape[0], w_b.shape[0]), min(w_a.shape[1], w_b.shape[1])
requires(n_layers > 0, NO_KIND_IN_B)  # model B's shape lacks this attention
layer = URL.read("cmp_layer", n_layers - 1, range(n_layers))
mid.selectbox(
    _("Layer"),
    list(range(n_layers)),
    key="cmp_layer",
    format_func=attention_figs.layer_names(n_layers, cap_a.windows.get(kind)).__getitem__,  # model A's kinds
    label_visibility="collapsed",
)
heads = ["average", *range(n_heads)]
head = URL.read("cmp_head", choices=heads)
right.selectbox(
    _("Head"),
    heads,
    key="cmp_head",
    label_visibility="collapsed",
    format_func=lambda h: _("average of heads") if h == "average" else _("head {h}").format(h=h),
)
URL.write(cmp_kind=kind, cmp_layer=layer, cmp_head=head, cmp_input=fed)


def top_px(boxes: int) -> int:
    """Where the first chart starts at 1366x768 in presentation mode (measured): below the models, their
    descriptions and the controls, the decoder input's row when it is there, and each reason shown above the chart."""
    return 395 + (45 if choosing_input else 0) + 105 * boxes


which = _("average of heads") if head == "average" else _("head {h}").format(h=head)
h = None if head == "average" else int(head)
max_height, max_width = chart_box()
KEYS = {"encoder_self": "source_tokens", "decoder_self": "target_tokens", "cross": "source_tokens"}


def tokens(cap):
    """(rows, key tokens) of the chosen kind: rows by the one convention (viz/tokens.capture_rows)."""
    return capture_rows(cap, kind), getattr(cap, KEYS[kind])


def mask(cap):  # the causal mask, and the band of a local layer (each model its own)
    masks = attention_figs.layer_masks(kind, *getattr(cap, kind).shape[-2:], cap.windows.get(kind))
    return masks[layer, 0] if masks is not None and masks.ndim == 4 else masks


if cap_b is None:
    for message in check_b.errors:
        st.error(_("Model B cannot read this input: {why}").format(why=md(message)))
shown = {_(m) for m in session.check.warnings}  # the sidebar's model (A) already said these
for message in check_b.warnings:
    if _(message) not in shown:
        st.warning(_("Model B: {why}").format(why=md(message)))
problems = mismatches(cap_a, cap_b, kind) if cap_b is not None else []
arrays = {"a": attention_map(cap_a, kind, layer, h)}
if cap_b is not None:
    arrays["b"] = attention_map(cap_b, kind, layer, h)
title = _("{kind}, layer {layer}, {which}").format(kind=_(SHORT[kind]), layer=layer, which=which)
names = (
    _("A: {m}").format(m=html.escape(session.label)),
    _("B: {m}").format(m=html.escape(b_label)),
)  # plotly reads HTML
if cap_b is not None and not problems:
    arrays["a_minus_b"] = arrays["a"] - arrays["b"]
    fig = compare_heatmaps(
        arrays["a"],
        arrays["b"],
        *tokens(cap_a),
        names,
        title,
        mask=mask(cap_a),
        max_height=max_height,
        max_width=max_width,
        tick_px=chart_text_px(),
        difference=_("A − B"),  # the panels beside it name the models: long names would overlap
    )
    show(fig, key="cmp_figure", top_px=top_px(0))
    st.caption(
        _("Right: A − B. Blue where A attends more, red where B does; the largest difference is {d:.3f}.").format(
            d=float(abs(arrays["a_minus_b"]).max()) if arrays["a_minus_b"].size else 0.0
        )
    )
else:
    detok = (session.tokenizer.target.detokenize, tok_b.target.detokenize)
    for p in problems:
        st.info(mismatch_message(p, detok))
    shown = [("a", cap_a)] + ([("b", cap_b)] if cap_b is not None else [])
    st.markdown(f"**{title}**")  # once for both: each chart's title names its model only (two long titles were cut)
    for column, (side, cap) in zip(st.columns(len(shown)), shown):
        fig = attention_figs.attention_heatmap(
            arrays[side],
            *tokens(cap),
            names[side == "b"],
            mask=mask(cap),
            max_height=max_height,
            max_width=max_width // len(shown),
            tick_px=chart_text_px(),
            snug=True,
        )
        show(fig, key=f"cmp_{side}", where=column, top_px=top_px(len(problems)) + 40)  # + the heading above

if kind != "encoder_self":
    explain("decoder_rows", config=cfg_a)  # rows: the tokens written, as on every page
settings = {"model_a": session.key, "model_b": b_key, "kind": kind, "layer": layer, "head": head, "input": text}


def download_tokens(side: str, cap) -> dict:
    """A model's token lists for the downloads: each row's label (the token it writes, or the source token), the
    decoder input it reads (decoder rows only), and the keys."""
    rows, keys = tokens(cap)
    lists = {f"{side}_row_tokens": rows.tokens, f"{side}_key_tokens": keys}
    return lists | ({f"{side}_row_inputs": rows.inputs} if rows.inputs is not None else {})


token_lists = download_tokens("a", cap_a) | (download_tokens("b", cap_b) if cap_b is not None else {})
download_row(
    (_("Download these maps (.npz)"), lambda: comparison_npz(arrays, **token_lists), "comparison.npz", "cmp_dl_npz"),
    (
        _("Download these maps (.json)"),
        lambda: comparison_json(arrays, settings, **token_lists),
        "comparison.json",
        "cmp_dl_json",
    ),
)
