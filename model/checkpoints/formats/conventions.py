"""How each format writes its sentences, and the tokenizer that follows those rules.

A state_dict says nothing about special tokens; the training code of each format does:
- The Annotated Transformer: specials <s>=0 </s>=1 <blank>=2 (padding) <unk>=3; source and target
  sentences are both `<s> ... </s>`.
- The PyTorch translation tutorial: <unk>=0 <pad>=1 <bos>=2 <eos>=3; both sides `<bos> ... <eos>`.
- pytorch-original-transformer: torchtext Fields, <unk>=0 <pad>=1; targets `<s> ... </s>` (<s>=2, </s>=3),
  sources bare words with no start or end token.
With a token list the ids are looked up by name in it; without one these are the ids used.
The app always appends an end token to the source; where a format's sources have none, the appended
token is <pad>, which every attention layer masks out, so the real tokens see exactly what they saw
in training (the extra column has weight 0).
"""

from __future__ import annotations

from dataclasses import dataclass

from i18n import M_

from ...text.tokenizer import SPECIAL_NAMES, IdVocab, ListVocab, Tokenizer, find_specials
from ..checkpoint import CheckpointError
from .vocab_files import VocabLists


@dataclass(frozen=True)
class Side:
    """One side's sentence convention: default special ids, and whether sentences carry <s> and </s>."""

    specials: dict[str, int]  # role ("pad", "bos", "eos", "unk") -> id when no token list is given
    starts_with_bos: bool = False
    ends_with_eos: bool = True


@dataclass(frozen=True)
class Conventions:
    source: Side
    target: Side


def _vocab(side: Side, name: str, size: int, tokens: list[str] | None, origin: str) -> IdVocab | ListVocab:
    """A ListVocab (token list given) or IdVocab of `size` ids for one side, following `side`'s rules."""
    if tokens is None:
        ids = dict(side.specials)
    else:
        if len(tokens) != size:
            raise CheckpointError(
                M_(
                    "{origin} has {n} {side} tokens but the model's {side} embedding has {size} rows",
                    origin=origin,
                    n=len(tokens),
                    side=name,
                    size=size,
                )
            )
        ids = {role: i for role, i in find_specials(tokens).items() if i is not None}
    needed = ["pad", "unk"] + ["bos"] * side.starts_with_bos + ["eos"] * side.ends_with_eos
    if name == "target":
        needed += ["bos", "eos"]
    absent = [role for role in dict.fromkeys(needed) if role not in ids]
    if absent:
        looked = "; ".join(f"{role}: {' or '.join(SPECIAL_NAMES[role])}" for role in absent)
        raise CheckpointError(
            M_(
                "{origin}: the {side} vocabulary lacks special tokens the format needs ({looked})",
                origin=origin,
                side=name,
                looked=looked,
            )
        )
    eos = ids["eos"] if side.ends_with_eos else ids["pad"]  # see the module docstring
    bos = ids.get("bos", ids["pad"])
    if tokens is None:
        return IdVocab(size, ids["pad"], bos, eos, ids["unk"], prepend_bos=side.starts_with_bos)
    return ListVocab(tokens, ids["pad"], bos, eos, ids["unk"], prepend_bos=side.starts_with_bos)


def build_tokenizer(
    conventions: Conventions,
    src_size: int,
    tgt_size: int,
    source: VocabLists | None = None,
    target: VocabLists | None = None,
) -> Tokenizer:
    """The two vocabularies (token lists where given, ids otherwise) with one shared padding id."""
    src = _vocab(
        conventions.source, "source", src_size, source.source if source else None, source.origin if source else "ids"
    )
    tgt = _vocab(
        conventions.target, "target", tgt_size, target.target if target else None, target.origin if target else "ids"
    )
    if src.pad_id != tgt.pad_id:
        raise CheckpointError(
            M_(
                "the source vocabulary pads with id {src} and the target with id {tgt}; "
                "this model masks one padding id on both sides",
                src=src.pad_id,
                tgt=tgt.pad_id,
            )
        )
    return Tokenizer(src, tgt)
