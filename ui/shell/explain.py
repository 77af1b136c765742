"""Short explanations shown in place, one or two sentences each, collapsible for lecturers who talk over them.

Pages call `explain(name)` where a reader needs it; the texts live here once, in English, and the translation
catalogues (i18n/locale) hold them in the other languages. Formulas are LaTeX (st.latex), everything else markdown.
"""

from __future__ import annotations

import streamlit as st

from i18n import N_, _
from ui.shell.shapes import explanation

# name -> (expander title, markdown, LaTeX lines shown after the text); title and text are marked for translation
# (the gettext catalogs in i18n/locale hold them in every language) and translated where shown.
TEXTS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "attention_map": (
        N_("How to read an attention map"),
        N_(
            "Each **row** is a query position (a token that looks), each **column** a key position (a token looked "
            "at). A row's weights sum to 1: the row *writes* into its position the weighted sum of the value vectors "
            "of the columns. **Grey cells are masked** (weight exactly 0): in decoder self-attention the causal mask "
            "hides later positions; padding is hidden everywhere."
        ),
        (  # words inside \text{} make it a message: marked (N_) and translated like the texts
            N_(
                r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}+M\right)V,"
                r"\quad M_{ij}=-\infty \text{ where masked}"
            ),
        ),
    ),
    "decoder_rows": (
        N_("Rows of the decoder: the tokens written"),
        N_(
            "On every page, in the lecture pack and in the downloads, a decoder row is labelled with the token it "
            "**writes**. Row j reads decoder input j (`<s>` then the output so far) and writes the next token: the "
            "row labelled “la” is the position whose input is `<s>`. Hover over a row for the input that wrote it "
            "(`<s> → la`); the last row writes the model's own next token (`</s>` once it is done). Encoder rows "
            "are the source tokens: an encoder writes nothing."
        ),
        (),
    ),
    "specials": (
        N_("<s>, </s>, <unk>"),
        N_(
            "`<s>` starts every decoder input; `</s>` ends the source and is the token with which the decoder says it "
            "is done; `<unk>` stands for any symbol the vocabulary does not know."
        ),
        (),
    ),
    "pieces": (
        N_("Ġ, ▁ and ## in tokens"),
        N_(
            "A subword tokenizer cuts words into pieces and marks where a word starts or goes on. GPT-2's byte-level "
            "BPE (and Llama 3's, Qwen's) writes the space before a word as `Ġ`: `Ġthe` is “ the”, and a line break "
            "is `Ċ`. Sentencepiece (T5, Llama 2, Marian, mBART) writes that space as `▁`. BERT's WordPiece marks a "
            "piece that continues a word with `##` (`play ##ing`). Tokens are shown as the vocabulary spells them."
        ),
        (),
    ),
    "heads": (
        N_("Heads and d_k"),
        N_(
            "Each of the h heads projects the d_model-wide vectors to queries, keys and values of width "
            "d_k = d_model / h, attends on its own, and the h outputs are concatenated and mixed by W^O. Dividing "
            "by √d_k keeps the dot products from growing with d_k and saturating the softmax."
        ),
        (
            r"\mathrm{head}_i=\mathrm{Attention}(XW_i^Q, XW_i^K, XW_i^V),\quad"
            r"\mathrm{MultiHead}(X)=[\mathrm{head}_1;\dots;\mathrm{head}_h]\,W^O",
        ),
    ),
    "post_ln": (
        N_("Post-LN and pre-LN"),
        N_(
            "The paper normalises after the residual sum (post-LN); many implementations normalise the sublayer's "
            "input instead (pre-LN), which trains more easily when deep. The Model page says which one is loaded."
        ),
        (
            r"\text{post-LN: } x \leftarrow \mathrm{LayerNorm}(x+\mathrm{Sublayer}(x))\qquad"
            r"\text{pre-LN: } x \leftarrow x+\mathrm{Sublayer}(\mathrm{LayerNorm}(x))",
        ),
    ),
    "pe_formula": (
        N_("The formula"),
        N_(
            "Position p and pair index i (dimensions 2i and 2i+1 share a frequency ωᵢ): a sine on the even "
            "dimension, a cosine on the odd one. Wavelengths grow geometrically from 2π to base·2π."
        ),
        (
            r"PE_{(p,\,2i)}=\sin(p\,\omega_i),\quad PE_{(p,\,2i+1)}=\cos(p\,\omega_i),\quad"
            r"\omega_i=\mathrm{base}^{-2i/d_{\mathrm{model}}}",
        ),
    ),
    "pe_dot": (
        N_("Why the dot product depends on the offset only"),
        N_(
            "Pair up the sine and cosine of each frequency and use sin a sin b + cos a cos b = cos(a − b): "
            "the position p cancels, so every starting position gives the same curve."
        ),
        (
            r"PE(p)\cdot PE(p+k)=\sum_i \big[\sin(p\omega_i)\sin((p+k)\omega_i)+\cos(p\omega_i)\cos((p+k)\omega_i)\big]"
            r"=\sum_i \cos(k\,\omega_i)",
        ),
    ),
    "pe_rotation": (
        N_("Why a shift is a rotation"),
        N_(
            "For each pair, the values at p+k are those at p rotated by the angle k·ωᵢ. Stacking these 2×2 "
            "rotations gives one fixed matrix M_k, the same for every p: a linear layer can read relative position."
        ),
        (
            r"\begin{pmatrix}\sin((p+k)\omega_i)\\ \cos((p+k)\omega_i)\end{pmatrix}="
            r"\begin{pmatrix}\cos k\omega_i & \sin k\omega_i\\ -\sin k\omega_i & \cos k\omega_i\end{pmatrix}"
            r"\begin{pmatrix}\sin(p\omega_i)\\ \cos(p\omega_i)\end{pmatrix},\qquad PE(p+k)=M_k\,PE(p)",
        ),
    ),
}


Text = tuple[str, str, tuple[str, ...]]  # (expander title, markdown, LaTeX lines), marked with N_


def explain(name: str | Text, expanded: bool = False, config=None) -> None:
    """The explanation `name` of TEXTS (or a Text given whole, e.g. by a registry entry's app half) in a collapsed
    expander (a lecturer opens it, or talks over it); with the model's `config`, as its shape says it
    (ui.shell.shapes.WORDS: a decoder-only model's rows, an encoder-only model's special tokens)."""
    title, text, formulas = explanation(name, config, TEXTS[name]) if isinstance(name, str) else name
    with st.expander(_(title), expanded=expanded, icon=":material/info:"):
        st.markdown(_(text))
        for formula in formulas:
            st.latex(_(formula))  # only formulas with words have a translation; the others are themselves


def explain_row(*names: str | Text, config=None) -> None:
    """Several explanations side by side, one collapsed expander per column: one line of the page in all (as the
    shape of the model of `config` says them)."""
    for column, name in zip(st.columns(len(names)), names, strict=True):
        with column:
            explain(name, config=config)


# The worked example's puzzle in one line, and its link's words: marked here, translated where shown.
DISAGREEMENT = N_(
    "Attention and the gold alignment disagree on {n} of {m} output tokens: the row that writes “{out}” "
    "peaks on “{peak}”, its gold source is “{gold}”. Attention shows where a head looks, not what the output "
    "depends on; {link}."
)
ATTRIBUTION_LINK = N_("the Attribution page tests which source tokens it depends on")


def explain_disagreement(odd: list, rows: int, outputs: list, sources: list, session) -> None:
    """One line under an attention map whose peaks miss the gold alignment on some rows (tasks.gold.disagreements),
    with a link to the Attribution page for the first such output token (model, input, language and mode kept)."""
    from ui.shell.safe_text import esc
    from ui.shell.url_state import page_link
    from viz.tokens import plain_token

    row, peak, golds = odd[0]
    link = page_link("attribution", attr_tok=row)  # the same model, input, language and mode; that output token
    label = _(ATTRIBUTION_LINK)
    st.caption(
        _(DISAGREEMENT).format(
            n=len(odd),
            m=rows,
            out=esc(plain_token(outputs[row])),
            peak=esc(plain_token(sources[peak])),
            gold=esc(" ".join(plain_token(sources[g]) for g in golds)),
            link=f"[{label}]({link})",
        )
    )
