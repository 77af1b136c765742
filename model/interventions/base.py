"""The protocol every intervention kind follows: one frozen dataclass per kind, in a module of its own.

A kind says
- where it changes the forward pass: the hook points it names in `points` and the method for each, which the
  recording hooks (model/network/recording.py) call while its `record` block is active:
      HEADS      change_heads(kind, layer, output (B, H, Tq, dk)) -> output     each head's output before W^O
      ROWS       change_rows(module, offset, rows (T, D)) -> rows               the positional rows added
      POSITIONS  change_positions(positions (T,)) -> positions                  a rope / alibi / relative index
- how it is written: in a URL (`to_url(prefix)` / `from_url(params, prefix, model)`), in a download
  (`describe()` / `from_describe(record)`, JSON-ready) and in a label (`label()`, the current language);
- how the public keyword arguments (`capture(..., ablate=..., positional=..., shift=..., seed=...)`) name it:
  `from_keywords(**keywords)`, None when they do not ask for it;
- what it needs from the decoding loop: `needs_full_prefix`, `limit_steps`, and `check` against a model.

`slot`: kinds in the same slot exclude each other (one positional change at a time).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn

HEADS, ROWS, POSITIONS = "heads", "rows", "positions"  # the hook points of model/network/recording.py
ATTENTION_KINDS = ("encoder_self", "decoder_self", "cross")  # the attention modules a HEADS change names
MAX_SHIFT = 1_000_000  # largest shift or shuffle seed a call accepts


def whole_number(name: str, value: Any, low: int = 0, high: int = MAX_SHIFT) -> int:
    """value when it is an int from low to high (not a bool); ValueError naming `name` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be a whole number from {low} to {high:,}, got {value!r}")
    return value


@dataclass(frozen=True)
class Change:
    """One intervention of one kind (subclasses are frozen dataclasses: hashable, usable in cache keys)."""

    name: ClassVar[str] = ""  # the registry's key
    slot: ClassVar[str] = ""  # kinds of one slot exclude each other
    points: ClassVar[frozenset[str]] = frozenset()  # the hook points it changes
    needs_full_prefix: ClassVar[bool] = False  # decoding re-runs the whole prefix each step (no key/value cache)

    # -- the forward pass ------------------------------------------------------------------------------------
    def touches(self, kind: str, layer: int) -> bool:
        """Whether it changes the head outputs of this attention module (HEADS point only)."""
        return False

    def change_heads(self, kind: str, layer: int, output: torch.Tensor) -> torch.Tensor:
        return output

    def change_rows(self, module: nn.Module, offset: int, rows: torch.Tensor) -> torch.Tensor:
        return rows

    def change_positions(self, positions: torch.Tensor) -> torch.Tensor:
        return positions

    def check(self, model: nn.Module, lengths: Iterable[int] = ()) -> None:
        """ValueError when it does not fit this model, or sequences of these lengths."""

    def limit_steps(self, model: nn.Module, limit: int) -> int:
        """The decoding step limit under this change (at most `limit`)."""
        return limit

    @classmethod
    def example(cls, model: nn.Module) -> Change:
        """A change of this kind that fits `model` and changes its output (for tests and the docs)."""
        raise NotImplementedError

    # -- how it is written -----------------------------------------------------------------------------------
    @classmethod
    def from_keywords(cls, **keywords: Any) -> Change | None:
        raise NotImplementedError

    def describe(self) -> dict:
        raise NotImplementedError

    @classmethod
    def from_describe(cls, record: Mapping[str, Any]) -> Change | None:
        raise NotImplementedError

    def to_url(self, prefix: str) -> dict[str, str]:
        raise NotImplementedError

    @classmethod
    def url_keys(cls, prefix: str) -> tuple[str, ...]:
        """Every URL key the kind may write (a page clears them when the change goes)."""
        raise NotImplementedError

    @classmethod
    def from_url(
        cls, params: Mapping[str, str], prefix: str, model: nn.Module | None = None
    ) -> tuple[Change | None, bool]:
        """(the change a link names, or None; whether the link named something this model cannot take)."""
        raise NotImplementedError

    def label(self) -> str:
        raise NotImplementedError
