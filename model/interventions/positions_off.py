"""positional="off": no positional encoding is added (the embeddings alone); a rope / alibi / relative model sees
every position as 0 (no rotation, no distance)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from i18n import N_, _

from .positions import PositionChange

LABEL = N_("positions removed")


@dataclass(frozen=True)
class PositionsOff(PositionChange):
    name: ClassVar[str] = "positions_off"
    positional: ClassVar[str] = "off"
    title: ClassVar[str] = N_("Off")
    what: ClassVar[str] = N_("with no positional encoding")

    def change_rows(self, module: nn.Module, offset: int, rows: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(rows)

    def change_positions(self, positions: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(positions)

    def label(self) -> str:
        return _(LABEL)


KIND = PositionsOff
