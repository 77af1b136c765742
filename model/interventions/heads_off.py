"""Heads switched off (ablation): ablate=[("cross", 1, 0)] makes head 0 of layer 1's cross-attention output zeros
before W^O. In a URL `<page>_off=c1.0,e0.3` (kind e/d/c, then layer.head); in a download
{"ablate": [["cross", 1, 0]]}.

`per_row` (for head importance, not for one view): batch row b additionally switches off the heads in per_row[b],
so one batched pass runs many different ablations of the same input.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import nn

from i18n import ngettext

from .base import ATTENTION_KINDS, HEADS, Change

Head = tuple[str, int, int]
CODES = {"encoder_self": "e", "decoder_self": "d", "cross": "c"}  # a kind's letter in a URL
KIND_OF = {code: kind for kind, code in CODES.items()}
HEAD_CODE = re.compile(r"([edc])(\d{1,4})\.(\d{1,4})")
MAX_URL_CHARS = 4096  # 3 kinds x 24 layers x 16 heads in the link's form; longer values are refused unread


def layer_counts(model: nn.Module) -> dict[str, int]:
    """kind -> number of attention layers of that kind (0 for a kind the model's shape lacks: a decoder-only model's
    decoder layers have no cross-attention)."""
    cfg = model.config
    cross = cfg.n_decoder_layers if "cross" in cfg.attention_kinds else 0
    return {"encoder_self": cfg.n_encoder_layers, "decoder_self": cfg.n_decoder_layers, "cross": cross}


def encode_heads(heads: Collection[Head]) -> str:
    """The URL form of a set of heads: "c1.0,e0.3" (sorted)."""
    return ",".join(f"{CODES[k]}{i}.{h}" for k, i, h in sorted(heads))


def parse_heads(raw: str, layers: Mapping[str, int], n_heads: int) -> tuple[set[Head], bool]:
    """The heads a URL value names that the model has, and whether anything in it was left out."""
    if len(raw) > MAX_URL_CHARS:
        return set(), True
    heads, dropped = set(), False
    for item in filter(None, (part.strip() for part in raw.split(","))):
        found = HEAD_CODE.fullmatch(item)
        if found is None:
            dropped = True
            continue
        kind, layer, head = KIND_OF[found[1]], int(found[2]), int(found[3])
        if layer < layers[kind] and head < n_heads:
            heads.add((kind, layer, head))
        else:
            dropped = True
    return heads, dropped


def normalise(ablate: Iterable[Any]) -> frozenset[Head]:
    """The (kind, layer, head) triples of `ablate`, type-checked; ValueError naming what is wrong."""
    heads = set()
    for item in ablate:
        try:
            kind, layer, head = item
        except (TypeError, ValueError):
            raise ValueError(f"each ablated head is (kind, layer, head), got {item!r}") from None
        if kind not in ATTENTION_KINDS:
            raise ValueError(f"ablated head {item!r}: kind must be one of {', '.join(ATTENTION_KINDS)}")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (layer, head)):
            raise ValueError(f"ablated head {item!r}: layer and head must be whole numbers")
        heads.add((kind, layer, head))
    return frozenset(heads)


def zero_heads(output: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Head outputs (B, H, Tq, dk) with exact zeros where keep (B, H, 1, 1) is False."""
    return torch.where(keep, output, torch.zeros((), dtype=output.dtype, device=output.device))


@dataclass(frozen=True)
class HeadsOff(Change):
    heads: frozenset[Head] = frozenset()  # switched off in every row
    per_row: tuple[frozenset[Head], ...] = field(default=())  # row b of the batch also switches off per_row[b]
    name: ClassVar[str] = "heads_off"
    slot: ClassVar[str] = "heads"
    points: ClassVar[frozenset[str]] = frozenset({HEADS})

    def __bool__(self) -> bool:
        return bool(self.heads) or any(self.per_row)

    def of(self, kind: str, layer: int) -> list[int]:
        """The heads of one attention module switched off in every row, ascending."""
        return sorted(h for k, i, h in self.heads if (k, i) == (kind, layer))

    def touches(self, kind: str, layer: int) -> bool:
        return any((k, i) == (kind, layer) for k, i, _ in self.heads.union(*self.per_row))

    def keep_mask(self, kind: str, layer: int, batch: int, n_heads: int, device: torch.device) -> torch.Tensor:
        """(B, H, 1, 1) bool: False where row b's head h of this module is switched off."""
        keep = torch.ones(batch, n_heads, dtype=torch.bool)
        keep[:, self.of(kind, layer)] = False
        if self.per_row:
            if len(self.per_row) != batch:
                raise ValueError(f"per-row ablation for {len(self.per_row)} rows, but the batch has {batch}")
            for b, row in enumerate(self.per_row):
                keep[b, [h for k, i, h in row if (k, i) == (kind, layer)]] = False
        return keep[:, :, None, None].to(device)

    def change_heads(self, kind: str, layer: int, output: torch.Tensor) -> torch.Tensor:
        B, H = output.shape[:2]
        return zero_heads(output, self.keep_mask(kind, layer, B, H, output.device))

    def check(self, model: nn.Module, lengths: Iterable[int] = ()) -> None:
        layers, n_heads = layer_counts(model), model.config.n_heads
        for kind, layer, head in sorted(self.heads.union(*self.per_row)):
            if not 0 <= layer < layers[kind]:
                raise ValueError(f"ablated head ({kind}, {layer}, {head}): the model has {layers[kind]} {kind} layers")
            if not 0 <= head < n_heads:
                raise ValueError(f"ablated head ({kind}, {layer}, {head}): the model has {n_heads} heads")

    @classmethod
    def example(cls, model: nn.Module) -> HeadsOff:
        return cls(frozenset({("encoder_self", 0, 0), ("cross", 0, model.config.n_heads - 1)}))

    @classmethod
    def from_keywords(cls, **keywords: Any) -> HeadsOff | None:
        heads = normalise(keywords.get("ablate") or ())
        return cls(heads) if heads else None

    def describe(self) -> dict:
        return {"ablate": [list(t) for t in sorted(self.heads)]} if self.heads else {}

    @classmethod
    def from_describe(cls, record: Mapping[str, Any]) -> HeadsOff | None:
        return cls.from_keywords(ablate=[tuple(h) for h in record.get("ablate") or ()])

    def to_url(self, prefix: str) -> dict[str, str]:
        return {f"{prefix}_off": encode_heads(self.heads)} if self.heads else {}

    @classmethod
    def url_keys(cls, prefix: str) -> tuple[str, ...]:
        return (f"{prefix}_off",)

    @classmethod
    def from_url(
        cls, params: Mapping[str, str], prefix: str, model: nn.Module | None = None
    ) -> tuple[HeadsOff | None, bool]:
        raw = params.get(f"{prefix}_off", "")
        if not raw:
            return None, False
        if model is None:
            raise ValueError("reading switched-off heads from a link needs the model (its layers and heads)")
        heads, dropped = parse_heads(raw, layer_counts(model), model.config.n_heads)
        return (cls(frozenset(heads)) if heads else None), dropped

    def label(self) -> str:
        n = len(self.heads)
        return ngettext("{n} head switched off", "{n} heads switched off", n).format(n=n)


KIND = HeadsOff
