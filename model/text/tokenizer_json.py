"""This project's vocabularies as a Hugging Face tokenizer.json: one description, run by `tokenizers` in the app
and by tokenizers.js (@huggingface/tokenizers, vendored in pack/static/vendor/tokenizers) in the lecture pack.

    description(vocab) -> dict            # the tokenizer.json of a Vocab (model/text/tokenizer.py)
    list_description(vocab) -> dict       # the tokenizer.json of a ListVocab (someone else's token list)
    symbols(vocab, text) -> list[str]     # text -> symbols, by running that description with `tokenizers`

The description says what Vocab's docstring says:
- normalizer: NFC (accents in composed form), then Lowercase when the vocabulary is lower-case (the capital sigma
  mapped to σ first, as `tokenizers` lower-cases it: SIGMA);
- pre-tokenizer: characters, one symbol per code point (a Split on `.`, isolated); or words: WhitespaceSplit, then a
  Split whose pattern isolates the punctuation at either end of a word, one mark per symbol, unless the word is
  known (the vocabulary's words with punctuation at an end are listed first in the pattern) or all punctuation;
- model: WordLevel over the token list, unknown symbols -> <unk>. No added tokens: "<s>" typed is text, as before.
"""

from __future__ import annotations

import json
import re
import unicodedata

PUNCT = r"\p{P}"


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


def word_pattern(tokens: list[str]) -> str:
    """The Split pattern of word vocabularies (Oniguruma syntax; tokenizers.js translates it to a JavaScript RegExp).

    Alternatives, the first that matches at a position wins: a known word with punctuation at an end, whole; a word
    that is all punctuation, whole; a core from the first to the last character that is not punctuation; a single
    punctuation mark (those before and after the core)."""
    edged = sorted(
        (t for t in tokens if t and (_is_punct(t[0]) or _is_punct(t[-1])) and not all(map(_is_punct, t))),
        key=lambda t: (-len(t), t),
    )
    known = f"^(?:{'|'.join(re.escape(t) for t in edged)})$|" if edged else ""
    return f"{known}^{PUNCT}+$|[^{PUNCT}](?:.*[^{PUNCT}])?|{PUNCT}"


# Lower-casing reads the capital sigma as σ in `tokenizers` (one character at a time) but as ς at a word's end in
# tokenizers.js (JavaScript's toLowerCase); the only character whose lower case differs between them. Mapped to σ
# first, it reads as σ in both: the app's reading.
SIGMA = {"type": "Replace", "pattern": {"String": "\u03a3"}, "content": "\u03c3"}


def _lowercases(node) -> bool:
    if isinstance(node, dict):
        if node.get("type") == "Lowercase" or (node.get("type") == "BertNormalizer" and node.get("lowercase")):
            return True
        return any(_lowercases(v) for v in node.values())
    return isinstance(node, list) and any(_lowercases(v) for v in node)


def sigma_first(data: dict) -> dict:
    """A tokenizer.json whose normalizer lower-cases, with the capital sigma mapped to σ before it (see SIGMA): it
    reads every text as before in `tokenizers`, and so in tokenizers.js."""
    norm = data.get("normalizer")
    if not _lowercases(norm):
        return data
    return {**data, "normalizer": {"type": "Sequence", "normalizers": [SIGMA, norm]}}


def description(vocab) -> dict:
    """The tokenizer.json (as a dict) of a Vocab: see the module docstring."""
    normalizers = [{"type": "NFC"}] + ([SIGMA, {"type": "Lowercase"}] if vocab.lowercase else [])
    if vocab.level == "char":
        pre = {"type": "Split", "pattern": {"Regex": "."}, "behavior": "Isolated", "invert": False}
    else:
        split = {
            "type": "Split",
            "pattern": {"Regex": word_pattern(vocab.tokens)},
            "behavior": "Isolated",
            "invert": False,
        }
        pre = {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, split]}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": pre,
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": {t: i for i, t in enumerate(vocab.tokens)}, "unk_token": "<unk>"},
    }


def list_description(vocab) -> dict:
    """The tokenizer.json of a ListVocab (someone else's token list): words split at whitespace, lower-cased first when
    the list is (Σ as σ: SIGMA), each looked up whole (WordLevel; an unknown word is the list's unknown token)."""
    lower = {"type": "Sequence", "normalizers": [SIGMA, {"type": "Lowercase"}]}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": lower if vocab.lowercase else None,
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": None,
        "decoder": None,
        "model": {
            "type": "WordLevel",
            "vocab": {t: i for i, t in enumerate(vocab.tokens)},
            "unk_token": vocab.tokens[vocab.unk_id],
        },
    }


def compile_description(data: dict):
    """A `tokenizers.Tokenizer` running the description."""
    from tokenizers import Tokenizer

    return Tokenizer.from_str(json.dumps(data, ensure_ascii=False))


def run_symbols(tokenizer, text: str) -> list[str]:
    """The description's symbols of `text`: its normalizer, then its pre-tokenizer (the model only looks them up)."""
    normalized = tokenizer.normalizer.normalize_str(text) if tokenizer.normalizer is not None else text
    return [piece for piece, _ in tokenizer.pre_tokenizer.pre_tokenize_str(normalized)]
