"""What the pages share about the model's shape (encoder-decoder, decoder-only, encoder-only): which
attention kinds it has, the one line a page shows when a view does not apply, and the grouped-query note."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from i18n import N_, _

# One line per (page, missing side): why a view does not apply to this model. Marked here, translated when shown.
NO_DECODER = N_(
    "This view does not apply to an encoder-only model (BERT): it writes no tokens. The Attention page shows its "
    "self-attention."
)
NO_ENCODER = N_(
    "This view does not apply to a decoder-only model (GPT-2, Llama, Qwen2): it has no encoder, so no source and no "
    "cross-attention. The decoder reads the prompt and its continuation as one sequence."
)
NO_ATTRIBUTION = N_(
    "Attribution explains what a model writes or predicts; this encoder-only model has no output head (such as "
    "BERT's masked-LM head), so there is nothing to explain. The Attention page shows its self-attention."
)
ATTRIBUTION_PROMPT = N_(
    "A decoder-only model: each row explains one token of the continuation by the prompt's tokens, the "
    "continuation before it held fixed. Every method applies; rollout and flow run through the self-attention of "
    "the whole sequence."
)
ATTRIBUTION_MLM = N_(
    "An encoder-only model writes nothing: each row explains the masked-LM head's top prediction at one position "
    "by every token of the text. Every method applies; rollout and flow run through its self-attention."
)
NO_KIND_IN_B = N_(
    "Model B has none of this attention (its shape differs from model A's): choose another kind, or a model B of "
    "the same shape."
)
GQA = N_(
    "Grouped-query attention: {kv} key/value heads for {heads} query heads; query heads {groups} each share one "
    "key/value head."
)


KIND_NAMES = {  # the attention kinds as a page's kind menu names them
    "encoder_self": N_("Encoder self"),
    "decoder_self": N_("Decoder self (causal)"),
    "cross": N_("Cross (decoder → encoder)"),
}


def kind_radio(container, kinds, key: str, names: Mapping[str, str] = KIND_NAMES) -> None:
    """The attention-kind menu at the head of a page's row of controls: one horizontal radio of `kinds` (named by
    `names`, marked strings), in `container`, its label hidden, its value in st.session_state[key]."""
    container.radio(
        _("Attention"),
        list(kinds),
        key=key,
        horizontal=True,
        format_func=lambda k: _(names[k]),
        label_visibility="collapsed",
    )


Text = tuple[str, str, tuple[str, ...]]  # an explanation (ui.shell.explain): title, markdown, LaTeX lines (marked)


@dataclass(frozen=True)
class ShapeWords:
    """The words every page uses for one model shape (marked, translated where shown): no page names a stack the
    model does not have. A message says them through placeholders of the fields' names (`say`), or a page's
    explanation is this shape's own (`texts`)."""

    reads: str  # what the model reads: the columns of an attribution, the keys of what it attends to
    writes: str  # what it writes or predicts: the rows
    matrix: str  # the attribution page's every-row-by-every-column heading
    kinds: str  # its attention kinds, as a list in a sentence
    sequence: str  # the one sequence its attention runs over, as an axis's name
    attention: str  # the attention from what it writes to what it reads, in a chart's title
    read: str  # one token of what it reads, in a sentence
    written: str  # one token of what it writes or predicts, in a sentence
    held: str  # what occlusion holds fixed while it replaces one token, in a sentence
    rollout: str  # how attention rollout runs through its stacks, in a sentence
    sides: Mapping[str, tuple[str, str]]  # its attention kinds -> where their queries and keys come from (axes' names)
    texts: Mapping[str, Text] = field(default_factory=dict)  # explanations said in place of ui.shell.explain.TEXTS'


WORDS = {
    "encoder-decoder": ShapeWords(
        N_("source"), N_("output"), N_("Every output token × every source token"),
        N_("encoder self, decoder self, cross"), N_("source"), N_("cross-attention"), N_("source token"),
        N_("output token"), N_("the decoder input held fixed"),
        N_("multiplied through the encoder (R_ss); into the decoder after Chefer et al. 2021: each decoder "
           "self-attention step mixes what the positions hold (R_ts ← Â R_ts), each cross-attention step keeps half "
           "and adds half of the cross-attention times the encoder's rollout (R_ts ← 0.5 R_ts + 0.5 Ā_x R_ss)"),
        {"encoder_self": (N_("source"), N_("source")), "decoder_self": (N_("decoder input"), N_("decoder input")),
         "cross": (N_("decoder input"), N_("source"))},
    ),
    "decoder-only": ShapeWords(
        N_("prompt"), N_("continuation"), N_("Every token of the continuation × every token of the prompt"),
        N_("decoder self, causal"), N_("prompt and continuation"), N_("self-attention"), N_("prompt token"),
        N_("token of the continuation"), N_("the continuation before it held fixed"),
        N_("multiplied through the layers of the one causal sequence (R = Â_L … Â_1); a row keeps the prompt's "
           "columns (the continuation's own tokens are held fixed) and is divided by their sum"),
        {"decoder_self": (N_("prompt and continuation"), N_("prompt and continuation"))},
        {
            "decoder_rows": (N_("Rows of the sequence: the tokens written"), N_(
                "On every page, in the lecture pack and in the downloads, a row is labelled with the token it "
                "**writes**. Row j reads token j of the sequence (the prompt, then the continuation so far) and "
                "writes token j + 1: the row labelled with the continuation's first token is the prompt's last "
                "position. Hover over a row for the token that wrote it (`= → d`); the last row writes the model's "
                "own next token (`</s>` once it is done)."), ()),
            "specials": (N_("Special tokens of one sequence"), N_(
                "A decoder-only model reads one sequence: the prompt, then what it writes. A start token (`<s>`, "
                "GPT-2's `<|endoftext|>`) may open it; the model ends its continuation with its end token (`</s>`, "
                "`<|endoftext|>`) when it is done; `<unk>` stands for any symbol the vocabulary does not know."), ()),
        },
    ),
    "encoder-only": ShapeWords(
        N_("text"), N_("prediction"), N_("Every position’s prediction × every token of the text"),
        N_("encoder self"), N_("text tokens"), N_("self-attention"), N_("text token"), N_("predicted token"),
        N_("every other token of the text as it was"),
        N_("multiplied through the layers of the text's self-attention (R = Â_L … Â_1)"),
        {"encoder_self": (N_("text"), N_("text"))},
        {
            "attention_map": (N_("How to read an attention map"), N_(
                "Each **row** is a query position (a token that looks), each **column** a key position (a token "
                "looked at). A row's weights sum to 1: the row *writes* into its position the weighted sum of the "
                "value vectors of the columns. **Grey cells are masked** (weight exactly 0): an encoder masks "
                "padding only, so every token of the text looks at every other."), (N_(
                r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}+M\right)V,"
                r"\quad M_{ij}=-\infty \text{ where masked}"),)),
            "specials": (N_("[CLS], [SEP], [MASK]"), N_(
                "The tokenizer writes its special tokens around the text: BERT's `[CLS]` starts it and `[SEP]` ends "
                "it; `[MASK]` hides a token for the masked-LM head to predict; `[UNK]` stands for any piece of a "
                "word the vocabulary does not know."), ()),
        },
    ),
}  # fmt: skip


def words(config) -> ShapeWords:
    """The word list of the model's shape (config.shape)."""
    return WORDS[config.shape]


class _Said(dict):
    """The shape's words for str.format_map, each translated when a message asks for it (and only then)."""

    def __init__(self, shape: ShapeWords, values: Mapping[str, Any]):
        super().__init__(values)
        self.shape = shape

    def __missing__(self, name: str) -> str:
        return _(getattr(self.shape, name))


def decoder_side(config) -> str:
    """What the model's decoder reads, translated: an encoder-decoder's "decoder input", a decoder-only model's
    "prompt and continuation" (an encoder-only model reads its text)."""
    own = words(config).sides
    queries, _keys = own.get("decoder_self") or own["encoder_self"]
    return _(queries)


def say(message: str, config, **values: Any) -> str:
    """`message` (marked, its placeholders fields of ShapeWords or `values`) translated and said with the words of
    the model's shape: "the {read}" is "the source token" for an encoder-decoder, "the prompt token" for a
    decoder-only model."""
    return _(message).format_map(_Said(words(config), values))


def explanation(name: str, config, default: Text) -> Text:
    """The explanation `name` of ui.shell.explain as this model's shape says it: its own, else `default`."""
    return words(config).texts.get(name, default) if config is not None else default


def kinds_of(config) -> list[str]:
    """The attention kinds the model has, as the pages' menus name them in the link ("encoder self", "decoder
    self", "cross"): an encoder-decoder has the three, a decoder-only model its decoder's self-attention only, an
    encoder-only model its encoder's."""
    has = {"encoder self": config.has_encoder, "decoder self": config.has_decoder}
    has["cross"] = config.has_encoder and config.has_decoder
    return [k for k, present in has.items() if present]


def present_kinds(kinds: Mapping[str, Any], maps: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of `kinds` whose attention array in `maps` has layers (a shape's missing stack has none)."""
    return {k: v for k, v in kinds.items() if getattr(maps.get(k), "shape", (0,))[0]}


def requires(has: bool, why: str) -> None:
    """Stop the page with one line (translated) when the model lacks what the page needs."""
    if not has:
        st.info(_(why))
        st.stop()


def attributable(model) -> bool:
    """Whether the attribution page has something to explain: a decoder writes tokens, or an output head predicts."""
    return model.config.has_decoder or model.generator is not None


def attribution_note(config) -> None:
    """One line saying what the attribution page's rows and columns are for a decoder-only or encoder-only model."""
    if config.has_encoder and config.has_decoder:
        return
    st.caption(_(ATTRIBUTION_PROMPT if config.has_decoder else ATTRIBUTION_MLM))


def gqa_note(config) -> None:
    """A caption naming the groups of query heads that read one key/value head (nothing without GQA)."""
    if config.kv_heads == config.n_heads:
        return
    groups = {}
    for h in range(config.n_heads):
        groups.setdefault(config.kv_head_of(h), []).append(str(h))
    text = " | ".join(",".join(g) for g in groups.values())
    st.caption(_(GQA).format(kv=config.kv_heads, heads=config.n_heads, groups=text))


SEQUENCE = N_("Prompt: {prompt} tokens · continuation (the model’s own greedy output): {written} tokens “{text}”")
ENCODED = N_("Input: {n} tokens, as the model’s tokenizer writes them (its special tokens included)")


def capture_caption(cap, tokenizer, text: str) -> str | None:
    """The one-line summary of a capture of a decoder-only or encoder-only model (None for an encoder-decoder,
    whose page writes its own)."""
    from ui.shell.safe_text import esc

    if cap.source_tokens and cap.target_tokens:
        return None
    if not cap.target_tokens:
        return _(ENCODED).format(n=len(cap.source_tokens))
    prompt = min(len(tokenizer.source.encode(text)), len(cap.target_tokens))
    written = cap.target_tokens[prompt:]
    return _(SEQUENCE).format(prompt=prompt, written=len(written), text=esc(tokenizer.target.detokenize(written)))


KV_HEAD = N_("Grouped-query attention: query head {head} reads key/value head {kv}, shared with query heads {group}.")


def kv_note(config, head: int) -> None:
    """A caption naming the key/value head that query head `head` reads and the heads that share it (none without
    GQA): the keys and values shown are that shared head's."""
    if config.kv_heads == config.n_heads:
        return
    kv = config.kv_head_of(head)
    group = ", ".join(str(h) for h in range(config.n_heads) if config.kv_head_of(h) == kv)
    st.caption(_(KV_HEAD).format(head=head, kv=kv, group=group))


def special_keys(tokens, vocab) -> list[int]:
    """Positions after the first of the tokens the vocabulary calls special ([SEP], </s>, a BOS in the middle)."""
    from model.text.tokenizer import SPECIALS

    special = set(SPECIALS) | set(getattr(vocab, "added", {}) or {})
    return [i for i, t in enumerate(tokens) if i and t in special]
