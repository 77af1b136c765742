"""Character- and word-level tokenizers with the four special tokens, saved as JSON.

A `Tokenizer` holds one `Vocab` per side (source and target; the same object when shared). Unknown
symbols become `<unk>`; encoding never raises on what a user types.
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

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


def clean_text(text: str) -> str:
    """Drop control and format characters (pasted tabs, zero-width spaces, ...) and collapse whitespace runs."""
    kept = "".join(" " if ch.isspace() else ch for ch in text if ch.isspace() or unicodedata.category(ch)[0] != "C")
    return " ".join(kept.split())


@dataclass
class Vocab:
    """One side's symbols. Ids 0..3 are <pad> <s> </s> <unk>; the rest follow `tokens`' order."""

    tokens: list[str]  # every symbol, specials first
    level: str = "word"  # "char" or "word"
    lowercase: bool = False  # lower-case text before looking symbols up

    def __post_init__(self) -> None:
        if list(self.tokens[: len(SPECIALS)]) != list(SPECIALS):
            raise ValueError(f"a vocabulary must start with {SPECIALS}, got {self.tokens[:4]}")
        if len(set(self.tokens)) != len(self.tokens):
            dupes = sorted(t for t, n in Counter(self.tokens).items() if n > 1)
            raise ValueError(f"duplicate tokens in vocabulary: {dupes[:10]}")
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, got {self.level!r}")
        self._ids = {tok: i for i, tok in enumerate(self.tokens)}

    @classmethod
    def build(cls, symbols: Iterable[str], level: str = "word", lowercase: bool = False) -> "Vocab":
        """Specials, then the given symbols in order of first appearance (duplicates dropped)."""
        ordered = dict.fromkeys(s for s in symbols if s not in SPECIALS)
        return cls(list(SPECIALS) + list(ordered), level, lowercase)

    pad_id, bos_id, eos_id, unk_id = 0, 1, 2, 3

    def __len__(self) -> int:
        return len(self.tokens)

    def split(self, text: str) -> list[str]:
        return split(text.lower() if self.lowercase else text, self.level)

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
    def from_dict(cls, data: dict) -> "Vocab":
        if not isinstance(data, dict) or "tokens" not in data:
            raise ValueError("a vocabulary entry needs a 'tokens' list")
        return cls(list(data["tokens"]), data.get("level", "word"), bool(data.get("lowercase", False)))


@dataclass
class Tokenizer:
    """The source and target vocabularies of one model."""

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
    def from_dict(cls, data: dict) -> "Tokenizer":
        if "shared" in data:
            vocab = Vocab.from_dict(data["shared"])
            return cls(vocab, vocab)
        missing = [k for k in ("source", "target") if k not in data]
        if missing:
            raise ValueError(f"tokenizer JSON lacks {' and '.join(missing)} (or a 'shared' vocabulary)")
        return cls(Vocab.from_dict(data["source"]), Vocab.from_dict(data["target"]))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=1), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> "Tokenizer":
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
