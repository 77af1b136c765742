"""positional="shifted": every position p gets the row of p + shift (a rope / alibi / relative model reads
p + shift as its index, which changes nothing for these relative schemes). Decoding stops early enough that the
shifted positions stay inside the positional table."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from i18n import N_, _

from .base import whole_number
from .positions import PositionChange

LABEL = N_("positions shifted by {k}")


@dataclass(frozen=True)
class PositionsShifted(PositionChange):
    shift: int = 1  # every position p reads the row of p + shift
    name: ClassVar[str] = "positions_shifted"
    positional: ClassVar[str] = "shifted"
    setting: ClassVar[str | None] = "shift"
    title: ClassVar[str] = N_("Shifted by k")
    what: ClassVar[str] = N_("with every position shifted by {k}")

    def __post_init__(self) -> None:
        whole_number("shift", self.shift)

    def change_rows(self, module: nn.Module, offset: int, rows: torch.Tensor) -> torch.Tensor:
        return module.rows(offset + self.shift, rows.size(0))

    def change_positions(self, positions: torch.Tensor) -> torch.Tensor:
        return positions + self.shift

    def check(self, model: nn.Module, lengths: Iterable[int] = ()) -> None:
        longest, rows = max(lengths, default=0), model.config.max_len
        if longest + self.shift > rows:
            raise ValueError(
                f"shifting {longest} positions by {self.shift} needs {longest + self.shift} positional rows; "
                f"the model has {rows} (max_len)"
            )

    def limit_steps(self, model: nn.Module, limit: int) -> int:
        """The last decoder input sits at position limit - 1 + shift: keep it inside the table."""
        return max(0, min(limit, model.config.max_len - self.shift))

    def label(self) -> str:
        return _(LABEL).format(k=self.shift)


KIND = PositionsShifted
