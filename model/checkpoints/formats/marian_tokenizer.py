"""A MarianMT folder's own tokenizer: sentencepiece splits the text, vocab.json gives the ids.

Mirrors MarianTokenizer: source text -> an optional leading language code (">>fra<<", one token)
plus source.spm pieces -> ids from vocab.json (pieces it lacks are <unk>); targets use target.spm, and
target_vocab.json when tokenizer_config.json says separate_vocabs. Needs the sentencepiece package.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from i18n import M_

from ...text.bounded import check_expansion
from ...text.tokenizer import IdVocab, Tokenizer
from ..checkpoint import CheckpointError
from ..safe_io import read_json, regular_file
from ..tokenizer_budget import charge

TOKENIZER_FILES = ("vocab.json", "source.spm", "target.spm")


class MarianVocab:
    """One side of a MarianTokenizer: sentencepiece splits the text, vocab.json gives the ids.

    Ids come from vocab.json, not from the sentencepiece model; pieces missing from vocab.json are <unk>.
    A leading language code such as ">>fra<<" is looked up as one token. (Moses punctuation
    normalisation, which MarianTokenizer applies when sacremoses is installed, is not applied.)
    """

    level = "subword"
    prepend_bos = False

    def __init__(
        self, spm_path: Path, ids: Mapping[str, int], size: int, pad_id: int, bos_id: int, eos_id: int, unk_id: int
    ):
        import sentencepiece  # optional dependency: only Marian folders need it

        self.spm = sentencepiece.SentencePieceProcessor(model_file=str(spm_path))
        self.spm_name = spm_path.name
        self._ids = dict(ids)
        self._tokens = {i: tok for tok, i in self._ids.items()}
        self.size, self.pad_id, self.bos_id, self.eos_id, self.unk_id = size, pad_id, bos_id, eos_id, unk_id

    def __len__(self) -> int:
        return self.size

    def encode(self, text: str) -> list[int]:
        code: list[str] = []
        if text.startswith(">>") and (end := text.find("<<")) != -1:
            code, text = [text[: end + 2]], text[end + 2 :]
        pieces = code + self.spm.encode(text, out_type=str)
        return [self._ids.get(p, self.unk_id) for p in pieces]

    def token(self, i: int) -> str:
        return self._tokens.get(int(i), f"<id {int(i)}>")

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.token(int(i)) for i in ids]

    def detokenize(self, symbols: Sequence[str]) -> str:
        specials = {self.token(i) for i in (self.pad_id, self.bos_id, self.eos_id)}
        return self.spm.decode_pieces([s for s in symbols if s not in specials]).strip()

    def to_dict(self) -> dict:
        return {
            "kind": "marian",
            "spm": self.spm_name,
            "size": self.size,
            "tokens": self._ids,
            "pad_id": self.pad_id,
            "bos_id": self.bos_id,
            "eos_id": self.eos_id,
            "unk_id": self.unk_id,
        }


def _json_map(path: Path) -> dict[str, int]:
    data = read_json(path)
    if not isinstance(data, dict) or not all(type(v) is int for v in data.values()):
        raise CheckpointError(M_("{name} must map each token to an integer id", name=path.name))
    return data


def marian_tokenizer(folder: Path, cfg: dict[str, Any], src_size: int, tgt_size: int) -> Tokenizer:
    """The folder's own tokenizer (or ids only when it has no tokenizer files at all)."""
    pad, eos, start = cfg["pad_token_id"], cfg["eos_token_id"], cfg["decoder_start_token_id"]
    present = [f for f in TOKENIZER_FILES if (folder / f).is_file()]
    if not present:
        unk = 1 if src_size > 1 else 0  # <unk> is id 1 in Marian vocabularies
        return Tokenizer(IdVocab(src_size, pad, start, eos, unk), IdVocab(tgt_size, pad, start, eos, unk))
    absent = [f for f in TOKENIZER_FILES if f not in present]
    if absent:
        raise CheckpointError(
            M_(
                "{name}: the Marian tokenizer needs {absent} as well as {present}",
                name=folder.name,
                absent=", ".join(absent),
                present=", ".join(present),
            )
        )
    try:
        import sentencepiece  # noqa: F401
    except ImportError:
        raise CheckpointError(
            M_("reading a MarianMT tokenizer needs the sentencepiece package: pip install sentencepiece")
        ) from None
    files = [(folder / "vocab.json", "json"), (folder / "source.spm", "sentencepiece")]
    files.append((folder / "target.spm", "sentencepiece"))
    if (folder / "target_vocab.json").is_file():
        files.append((folder / "target_vocab.json", "json"))
    charge(files, folder.name)  # counted before any of them is parsed
    tok_cfg: dict[str, Any] = {}
    if (folder / "tokenizer_config.json").is_file():
        tok_cfg = read_json(folder / "tokenizer_config.json")
        if not isinstance(tok_cfg, dict):
            raise CheckpointError(M_("{name}/tokenizer_config.json must hold a JSON object", name=folder.name))
    src_ids = _json_map(folder / "vocab.json")
    tgt_ids = _json_map(folder / "target_vocab.json") if tok_cfg.get("separate_vocabs") else src_ids
    sides = []
    for name, ids, size, spm in (
        ("source", src_ids, src_size, "source.spm"),
        ("target", tgt_ids, tgt_size, "target.spm"),
    ):
        for token, want, field in (("</s>", eos, "eos_token_id"), ("<pad>", pad, "pad_token_id")):
            if ids.get(token) != want:
                raise CheckpointError(
                    M_(
                        "{folder}: the {side} vocabulary has {token} at id {id}, but config.json {field} is {want}",
                        folder=folder.name,
                        side=name,
                        token=token,
                        id=ids.get(token),
                        field=field,
                        want=want,
                    )
                )
        if "<unk>" not in ids:
            raise CheckpointError(
                M_("{folder}: the {side} vocabulary has no <unk> token", folder=folder.name, side=name)
            )
        too_big = [t for t, i in ids.items() if not 0 <= i < size]
        if too_big:
            raise CheckpointError(
                M_(
                    "{folder}: {n} {side} tokens have ids outside the model's {size} embeddings",
                    folder=folder.name,
                    n=len(too_big),
                    side=name,
                    size=size,
                )
            )
        regular_file(folder / spm)
        try:
            sides.append(MarianVocab(folder / spm, ids, size, pad, start, eos, ids["<unk>"]))
        except (OSError, RuntimeError) as err:
            raise CheckpointError(
                M_(
                    "{folder}: {file} is not a readable sentencepiece model ({problem})",
                    folder=folder.name,
                    file=spm,
                    problem=str(err),
                )
            ) from None
    for side, spm in zip(sides, ("source.spm", "target.spm")):
        check_expansion(side, f"{folder.name}/{spm}", CheckpointError)  # a rule that multiplies text: refused
    return Tokenizer(*sides)
