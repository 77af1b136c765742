"""Character- and word-level tokenizers with the four special tokens, saved as JSON.

A `Tokenizer` holds one vocabulary per side (source and target; the same object when shared). Unknown
symbols become `<unk>`; encoding never raises on what a user types.

Three kinds of vocabulary share one interface (encode, decode, token, detokenize, the four special
ids, len, to_dict): `Vocab` (this project's: specials at ids 0..3), `ListVocab` (someone else's token
list, specials wherever that list has them, found by name) and `IdVocab` (no token list at all:
text is a list of integer ids and tokens show as `<id 123>`).
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from .tokenizer_json import compile_description, description, list_description, run_symbols

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)
LEVELS = ("char", "word")


def split(text: str, level: str) -> list[str]:
    """Text -> token strings: one per character, or one per whitespace-separated word."""
    if level == "char":
        return list(text)
    if level == "word":
        return text.split()
    raise ValueError(f"level must be one of {LEVELS}, got {level!r}")


def _dropped(ch: str) -> bool:
    """What clean_text drops: control, format, private-use and unassigned characters (category C*), not whitespace."""
    return not ch.isspace() and unicodedata.category(ch)[0] == "C"


def clean_text(text: str) -> str:
    """Drop control and format characters (pasted tabs, zero-width spaces, ...) and collapse whitespace runs."""
    kept = "".join(" " if ch.isspace() else ch for ch in text if not _dropped(ch))
    return " ".join(kept.split())


@functools.cache
def clean_classes() -> dict:
    """clean_text's two classes of characters as code point ranges [first, last, first, last, ...]: "space" (read as
    a space) and "dropped", by this Python's unicodedata. The lecture pack's page cleans typed text by them
    (pack_text.js): a character its browser's newer Unicode knows (an emoji this Python does not) is dropped there
    as here."""
    return {"space": code_point_ranges(str.isspace), "dropped": code_point_ranges(_dropped)}


def code_point_ranges(member) -> list[int]:
    """[first, last, first, last, ...]: the code points c for which member(chr(c)), as inclusive ranges."""
    out: list[int] = []
    for inside, run in itertools.groupby(range(0x110000), key=lambda cp: member(chr(cp))):
        if inside:
            first = next(run)
            out += [first, first + sum(1 for _ in run)]
    return out


class _Described:
    """A vocabulary that reads text by its own Hugging Face tokenizer.json (`description()`,
    model/text/tokenizer_json.py), run here by `tokenizers` and in the lecture pack by tokenizers.js: the pack reads
    text as the app does."""

    _compiled = None  # the description run by `tokenizers`, made on first use

    def description(self) -> dict:
        raise NotImplementedError

    def split(self, text: str) -> list[str]:
        """The text's symbols: the description's normalizer, then its pre-tokenizer."""
        if self._compiled is None:
            self._compiled = compile_description(self.description())
        return run_symbols(self._compiled, text)


@dataclass
class Vocab(_Described):
    """One side's symbols. Ids 0..3 are <pad> <s> </s> <unk>; the rest follow `tokens`' order.

    Its symbols (split): accents in composed form (NFC: "e" + U+0301 reads as "é", as the vocabulary has it); words:
    punctuation at either end of a word the vocabulary does not know is split off ("étudiant." reads as "étudiant"
    "."), so that a sentence typed with its full stop reads its last word; known words stay whole."""

    tokens: list[str]  # every symbol, specials first
    level: str = "word"  # "char" or "word"
    lowercase: bool = False  # lower-case text before looking symbols up

    def __post_init__(self) -> None:
        if list(self.tokens[: len(SPECIALS)]) != list(SPECIALS):
            raise ValueError(f"a vocabulary must start with {SPECIALS}")
        if len(set(self.tokens)) != len(self.tokens):
            dupes = sorted(t for t, n in Counter(self.tokens).items() if n > 1)
            raise ValueError(f"duplicate tokens in the vocabulary: {len(dupes)} occur more than once (not quoted here)")
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}")
        self._ids = {tok: i for i, tok in enumerate(self.tokens)}

    @classmethod
    def build(cls, symbols: Iterable[str], level: str = "word", lowercase: bool = False) -> Vocab:
        """Specials, then the given symbols in order of first appearance (duplicates dropped)."""
        ordered = dict.fromkeys(s for s in symbols if s not in SPECIALS)
        return cls(list(SPECIALS) + list(ordered), level, lowercase)

    pad_id, bos_id, eos_id, unk_id = 0, 1, 2, 3

    def __len__(self) -> int:
        return len(self.tokens)

    def description(self) -> dict:
        """This vocabulary as a Hugging Face tokenizer.json (a dict): normalizer, pre-tokenizer, WordLevel model."""
        return description(self)

    def ids(self, symbols: Sequence[str]) -> list[int]:
        return [self._ids.get(s, self.unk_id) for s in symbols]

    def encode(self, text: str) -> list[int]:
        """Ids of the text's symbols, without <s> or </s>; unknown symbols map to <unk>."""
        return self.ids(self.split(text))

    def token(self, i: int) -> str:
        return self.tokens[i] if 0 <= i < len(self.tokens) else UNK

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.token(int(i)) for i in ids]

    def detokenize(self, symbols: Sequence[str]) -> str:
        """Token strings -> text, leaving out specials."""
        words = [s for s in symbols if s not in SPECIALS]
        return ("" if self.level == "char" else " ").join(words)

    def to_dict(self) -> dict:
        return {"level": self.level, "lowercase": self.lowercase, "tokens": list(self.tokens)}

    @classmethod
    def from_dict(cls, data: dict) -> Vocab:
        if not isinstance(data, dict) or "tokens" not in data:
            raise ValueError("a vocabulary entry needs a 'tokens' list")
        return cls(list(data["tokens"]), data.get("level", "word"), bool(data.get("lowercase", False)))


# Names under which public implementations spell the four special tokens (torchtext, fairseq, Marian, ...).
SPECIAL_NAMES: dict[str, tuple[str, ...]] = {
    "pad": ("<pad>", "<blank>"),
    "bos": ("<s>", "<bos>", "<sos>"),
    "eos": ("</s>", "<eos>"),
    "unk": ("<unk>",),
}


def find_specials(tokens: Sequence[str]) -> dict[str, int | None]:
    """{"pad"|"bos"|"eos"|"unk": id of the first token spelled like that special, or None}."""
    where = {tok: i for i, tok in reversed(list(enumerate(tokens)))}
    return {role: next((where[n] for n in names if n in where), None) for role, names in SPECIAL_NAMES.items()}


@dataclass
class ListVocab(_Described):
    """A word-level vocabulary from someone else's token list: id i is tokens[i].

    The special ids are wherever that list puts them (torchtext commonly has <unk>=0, <pad>=1; the
    Annotated Transformer <s>=0, </s>=1, <blank>=2). Text is split on whitespace, so a model trained
    on another tokenizer (spaCy, BPE) sees only the words whose spelling matches a token exactly.
    prepend_bos: encode() starts every text with <s> (formats whose source sentences begin with <s>).
    """

    tokens: list[str]
    pad_id: int
    bos_id: int
    eos_id: int
    unk_id: int
    lowercase: bool = False
    prepend_bos: bool = False
    level: ClassVar[str] = "word"

    def __post_init__(self) -> None:
        if len(set(self.tokens)) != len(self.tokens):
            dupes = sorted(t for t, n in Counter(self.tokens).items() if n > 1)
            raise ValueError(f"duplicate tokens in the vocabulary: {len(dupes)} occur more than once (not quoted here)")
        for role in ("pad_id", "bos_id", "eos_id", "unk_id"):
            if not 0 <= getattr(self, role) < len(self.tokens):
                raise ValueError(f"{role}={getattr(self, role)} is outside the vocabulary (0..{len(self.tokens) - 1})")
        self._ids = {tok: i for i, tok in enumerate(self.tokens)}
        self._special_ids = {self.pad_id, self.bos_id, self.eos_id, self.unk_id}

    def __len__(self) -> int:
        return len(self.tokens)

    def description(self) -> dict:
        """Its symbols: the whitespace-separated words, lower-cased when the list is (tokenizer_json.list_description)."""
        return list_description(self)

    def encode(self, text: str) -> list[int]:
        """Ids of the whitespace-separated words (unknown words -> unk_id), after <s> if prepend_bos."""
        return ([self.bos_id] if self.prepend_bos else []) + [self._ids.get(w, self.unk_id) for w in self.split(text)]

    def token(self, i: int) -> str:
        return self.tokens[i] if 0 <= i < len(self.tokens) else self.tokens[self.unk_id]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.token(int(i)) for i in ids]

    def detokenize(self, symbols: Sequence[str]) -> str:
        specials = {self.tokens[i] for i in self._special_ids}
        return " ".join(s for s in symbols if s not in specials)

    def to_dict(self) -> dict:
        return {
            "kind": "list",
            "tokens": list(self.tokens),
            "pad_id": self.pad_id,
            "bos_id": self.bos_id,
            "eos_id": self.eos_id,
            "unk_id": self.unk_id,
            "lowercase": self.lowercase,
            "prepend_bos": self.prepend_bos,
        }

    @classmethod
    def from_dict(cls, data: dict) -> ListVocab:
        fields = require(data, ("tokens", "pad_id", "bos_id", "eos_id", "unk_id"), "a token-list vocabulary entry")
        return cls(
            list(data["tokens"]),
            *(int(data[k]) for k in fields[1:]),
            lowercase=bool(data.get("lowercase", False)),
            prepend_bos=bool(data.get("prepend_bos", False)),
        )


_ID_FORM = re.compile(r"<id\s*(-?\d+)>")


@dataclass
class IdVocab:
    """No token list: the user types integer ids ("12 7 431", or "<id 12> <id 7>"), tokens show as `<id 12>`.

    Anything that is not an id inside 0..size-1 encodes to unk_id (encoding never raises).
    prepend_bos: encode() starts every text with bos_id, as ListVocab.
    """

    size: int
    pad_id: int
    bos_id: int
    eos_id: int
    unk_id: int
    prepend_bos: bool = False
    level: ClassVar[str] = "word"

    def __post_init__(self) -> None:
        for role in ("pad_id", "bos_id", "eos_id", "unk_id"):
            if not 0 <= getattr(self, role) < self.size:
                raise ValueError(f"{role}={getattr(self, role)} is outside the vocabulary (0..{self.size - 1})")

    def __len__(self) -> int:
        return self.size

    def _id(self, piece: str) -> int:
        try:
            i = int(piece)
        except ValueError:
            return self.unk_id
        return i if 0 <= i < self.size else self.unk_id

    def encode(self, text: str) -> list[int]:
        pieces = _ID_FORM.sub(r" \1 ", text).replace(",", " ").split()
        return ([self.bos_id] if self.prepend_bos else []) + [self._id(p) for p in pieces]

    def token(self, i: int) -> str:
        return f"<id {int(i)}>"

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.token(int(i)) for i in ids]

    def detokenize(self, symbols: Sequence[str]) -> str:
        """The ids of the non-special tokens, space-separated: text that encodes back to them."""
        specials = {self.token(i) for i in (self.pad_id, self.bos_id, self.eos_id)}
        return " ".join(m.group(1) for s in symbols if s not in specials and (m := _ID_FORM.fullmatch(s)))

    def to_dict(self) -> dict:
        return {
            "kind": "ids",
            "size": self.size,
            "pad_id": self.pad_id,
            "bos_id": self.bos_id,
            "eos_id": self.eos_id,
            "unk_id": self.unk_id,
            "prepend_bos": self.prepend_bos,
        }

    @classmethod
    def from_dict(cls, data: dict) -> IdVocab:
        fields = require(data, ("size", "pad_id", "bos_id", "eos_id", "unk_id"), "an id-only vocabulary entry")
        return cls(*(int(data[k]) for k in fields), prepend_bos=bool(data.get("prepend_bos", False)))


def require(data: dict, fields: tuple[str, ...], what: str) -> tuple[str, ...]:
    """`fields`, once each is in `data`; ValueError naming `what` and the ones it lacks."""
    if missing := [k for k in fields if k not in data]:
        raise ValueError(f"{what} lacks {', '.join(missing)}")
    return fields


def vocab_from_dict(data: dict) -> Vocab | ListVocab | IdVocab:
    """Rebuild any vocabulary from its to_dict(): dispatches on data["kind"] (absent: this project's Vocab)."""
    kind = data.get("kind", "vocab") if isinstance(data, dict) else "vocab"
    if kind == "vocab":
        return Vocab.from_dict(data)
    if kind == "list":
        return ListVocab.from_dict(data)
    if kind == "ids":
        return IdVocab.from_dict(data)
    if kind in ("marian", "t5", "mbart", "bart"):
        raise ValueError("a Hugging Face tokenizer needs the folder's own files: load that folder itself")
    raise ValueError("unknown vocabulary kind (expected vocab, list or ids)")


@dataclass
class Tokenizer:
    """The source and target vocabularies of one model (any of the vocabulary kinds above)."""

    source: Vocab
    target: Vocab

    @property
    def shared(self) -> bool:
        return self.source is self.target

    def to_dict(self) -> dict:
        if self.shared:
            return {"shared": self.source.to_dict()}
        return {"source": self.source.to_dict(), "target": self.target.to_dict()}

    @classmethod
    def from_dict(cls, data: dict) -> Tokenizer:
        if "shared" in data:
            vocab = vocab_from_dict(data["shared"])
            return cls(vocab, vocab)
        missing = [k for k in ("source", "target") if k not in data]
        if missing:
            raise ValueError(f"tokenizer JSON lacks {' and '.join(missing)} (or a 'shared' vocabulary)")
        return cls(vocab_from_dict(data["source"]), vocab_from_dict(data["target"]))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=1), encoding="utf-8")
