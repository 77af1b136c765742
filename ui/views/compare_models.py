"""The Compare page's model B: the demo it starts from, and why two maps cannot be subtracted, in the reader's words."""

from __future__ import annotations

import streamlit as st

from i18n import N_, _
from model.checkpoints.checkpoint import load_tokenizer
from model.checkpoints.demos import list_demos
from ui.shell.safe_text import esc
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
SAME_AS_A = N_(
    "Model B is model A itself (no other demo reads the same tokens): the difference is zero until you choose "
    "another model B."
)


def mismatch_message(p, detokenize=(None, None)) -> str:
    """Why the two models' maps cannot be subtracted (a model.analysis.compare mismatch), translated, the values of
    A and B in it. detokenize: A's and B's (the decoder inputs written as text; None: the tokens side by side)."""
    if p.what == "target_tokens":  # the two decoder inputs, as text (model outputs, or what was typed)
        values = {
            k: esc((detok(v) if detok is not None else " ".join(plain_token(t) for t in v))[:80])
            for k, v, detok in (("a", p.a, detokenize[0]), ("b", p.b, detokenize[1]))
        }
        return _(WHY[p.what]).format(**values)
    values = {k: len(v) if isinstance(v, list) else v for k, v in (("a", p.a), ("b", p.b))}
    return _(WHY[p.what]).format(**values)  # numbers of layers or heads, or of input tokens


def same_tokens(ids, writer, reader, reader_size: int) -> bool:
    """True when each of the ids one model wrote (writer: its target vocabulary) names the same token in the other's
    vocabulary (reader), inside its embedding table: the other can then read the ids themselves. Their text, written
    out and tokenized again, need not give them back: a byte-level model's half characters, a split the tokenizer
    would not choose."""
    ids = [int(i) for i in ids]
    return all(0 <= i < reader_size for i in ids) and writer.decode(ids) == reader.decode(ids)


@st.cache_data(max_entries=16, show_spinner=False)
def default_b(a_key: str, _a_tokenizer, layers: tuple[int, int, int]) -> str | None:
    """The demo to start B from: another one that reads the same tokens (so that the two maps can be subtracted),
    of the same shape if there is one; model A itself when no other reads its tokens (its demo, or its folder as
    path:FOLDER: the difference is then zero until the reader picks a B, and no other shape's words are on the
    page); None for an upload that shares no demo's tokens."""
    from model.checkpoints.checkpoint import load_config

    own = a_key.split("|", 1)[0]
    best, rank = None, 2
    for demo in list_demos():
        if f"demo:{demo.name}" == own or load_tokenizer(demo.path).to_dict() != _a_tokenizer.to_dict():
            continue
        cfg = load_config(demo.path)
        r = 0 if (cfg.n_encoder_layers, cfg.n_decoder_layers, cfg.n_heads) == layers else 1
        if r < rank:
            best, rank = demo.name, r
    if best is not None:
        return best
    return own.removeprefix("demo:") if own.startswith("demo:") else own if own.startswith("path:") else None
