"""The Compare page's model B: the demo it starts from, and why two maps cannot be subtracted, in the reader's words."""

from __future__ import annotations

import streamlit as st

from i18n import N_, _
from model.checkpoints.checkpoint import load_tokenizer
from model.checkpoints.demos import list_demos
from ui.safe_text import esc
from viz.tokens import plain_token

WHY = {
    "layers": N_(
        "A has {a} layers for this kind of attention, B has {b}: a difference needs the same layers and heads, so the "
        "two are shown side by side, at a layer both have."
    ),
    "heads": N_(
        "A has {a} heads per layer, B has {b}: a difference needs the same layers and heads, so the two are shown "
        "side by side (heads both have, or their average)."
    ),
    "source_tokens": N_(
        "The two models split the input differently (A: {a} tokens, B: {b}), so their maps have "
        "different columns and cannot be subtracted."
    ),
    "target_tokens": N_(
        "The two decoders read different inputs (A: “{a}”, B: “{b}”), so their rows are different positions; let "
        "both read one model's output to subtract them."
    ),
}


def mismatch_message(p) -> str:
    """Why the two models' maps cannot be subtracted (a model.analysis.compare mismatch), translated, the values of
    A and B in it."""
    if p.what == "target_tokens":  # the two decoder inputs, as text (model outputs, or what was typed)
        values = {k: esc(" ".join(plain_token(t) for t in v[1:])[:80]) for k, v in (("a", p.a), ("b", p.b))}
    else:  # numbers of layers or heads, or of source tokens
        values = {k: len(v) if isinstance(v, list) else v for k, v in (("a", p.a), ("b", p.b))}
    return _(WHY[p.what]).format(**values)


@st.cache_data(max_entries=16, show_spinner=False)
def default_b(a_key: str, _a_tokenizer, layers: tuple[int, int, int]) -> str | None:
    """Another demo to start B from: one that reads the same tokens and has the same shape, if there is one."""
    from model.checkpoints.checkpoint import load_config

    best, rank = None, 3
    for demo in list_demos():
        if f"demo:{demo.name}" == a_key.split("|", 1)[0]:
            continue
        cfg = load_config(demo.path)
        same_shape = (cfg.n_encoder_layers, cfg.n_decoder_layers, cfg.n_heads) == layers
        same_tokens = load_tokenizer(demo.path).to_dict() == _a_tokenizer.to_dict()
        r = 0 if same_shape and same_tokens else 1 if same_shape else 2
        if r < rank:
            best, rank = demo.name, r
    return best
