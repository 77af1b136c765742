"""positional="shuffled": the rows are added in a fixed random order of the positions (`seed` picks it): a
permutation of the sequence's own positions 0..T-1, so decoding recomputes the whole prefix at each step
(`needs_full_prefix`) instead of keeping earlier steps' shuffles. A rope / alibi / relative model reads the same
permutation as its position indices."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from i18n import N_, _

from .base import whole_number
from .positions import PositionChange

LABEL = N_("positions shuffled")


def permutation(seed: int, offset: int, length: int) -> torch.Tensor:
    """(length,) the fixed shuffle of positions offset .. offset+length-1 among 0 .. offset+length-1."""
    g = torch.Generator().manual_seed(seed)
    return torch.randperm(offset + length, generator=g)[offset:]


@dataclass(frozen=True)
class PositionsShuffled(PositionChange):
    seed: int = 0  # which permutation
    title: ClassVar[str] = N_("Shuffled")
    what: ClassVar[str] = N_("with the positions shuffled")
    name: ClassVar[str] = "positions_shuffled"
    positional: ClassVar[str] = "shuffled"
    setting: ClassVar[str | None] = "seed"
    needs_full_prefix: ClassVar[bool] = True

    def __post_init__(self) -> None:
        whole_number("seed", self.seed)

    def change_rows(self, module: nn.Module, offset: int, rows: torch.Tensor) -> torch.Tensor:
        order = permutation(self.seed, offset, rows.size(0))
        return module.table[order.to(module.table.device)]

    def change_positions(self, positions: torch.Tensor) -> torch.Tensor:
        if not len(positions):
            return positions
        return permutation(self.seed, int(positions[0]), len(positions)).to(positions.device)

    def label(self) -> str:
        return _(LABEL)


KIND = PositionsShuffled
