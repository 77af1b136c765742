"""The `Interventions` value: what one call changes in the model while it runs, as one hashable record.

It holds at most one `Change` per slot (model/interventions/base.py; one module per kind, registered in
registry.py), travels whole into `record(model, interventions=...)`, `capture`, every decoding strategy, head
importance and the positional experiment, and is written in the form each place needs: `describe()` (downloads,
Capture.interventions), `to_url(prefix)` / `from_url(...)` (links), `label()` (the verdict's words).
The recording hooks ask it for each hook point (`at`, `heads`, `rows`, `positions`), only inside that call's
`record` block (the same ContextVar rule as the records), so other sessions sharing the model are not affected.

The keyword form users call, `capture(..., ablate=[("cross", 1, 0)], positional="off" | "shuffled" | "shifted",
shift=3, seed=0)`, becomes a value through `Interventions.make(...)`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from i18n import _

from .base import MAX_SHIFT, Change
from .heads_off import HeadsOff
from .registry import KIND_CLASSES

DEPRECATED_KEYWORDS = (
    "the keywords ablate=, positional=, shift= and seed= are deprecated: pass "
    "interventions=Interventions.make(ablate=..., positional=..., shift=..., seed=...)"
)

POSITIONAL = tuple(k.positional for k in KIND_CLASSES.values() if k.slot == "positions")  # ("off", "shuffled", ...)

__all__ = ["MAX_SHIFT", "NONE", "POSITIONAL", "Interventions"]


def _order(change: Change) -> int:
    return list(KIND_CLASSES).index(change.name)


@dataclass(frozen=True)
class Interventions:
    """What to change in one pass: `changes`, one per slot, in registry order (empty: nothing)."""

    changes: tuple[Change, ...] = ()

    @classmethod
    def of(cls, *changes: Change | None) -> Interventions:
        """The value holding these changes (None and empty ones left out); ValueError when two share a slot."""
        kept = [c for c in changes if c is not None and c]
        slots = [c.slot for c in kept]
        if len(set(slots)) != len(slots):
            raise ValueError(f"one change per slot, got {', '.join(c.name for c in kept)}")
        return cls(tuple(sorted(kept, key=_order)))

    @classmethod
    def make(
        cls,
        ablate: Iterable[tuple[str, int, int]] | None = None,
        positional: str | None = None,
        shift: int = 1,
        seed: int = 0,
        **more: Any,
    ) -> Interventions:
        """The value the keyword arguments of capture(...) ask for; ValueError naming what is wrong."""
        if positional is not None and positional not in POSITIONAL:
            raise ValueError(f"positional must be None or one of {', '.join(POSITIONAL)}, got {positional!r}")
        keywords = dict(ablate=ablate, positional=positional, shift=shift, seed=seed, **more)
        return cls.of(*(kind.from_keywords(**keywords) for kind in KIND_CLASSES.values()))

    @classmethod
    def given(cls, interventions: Interventions | None = None, **keywords: Any) -> Interventions:
        """What a call takes: `interventions` whole, or the value its keyword arguments (ablate=..., positional=...,
        shift=..., seed=...) ask for; ValueError when both are given, or a keyword is bad. The keywords are the older
        calling convention, kept as a thin layer: they still work, with a DeprecationWarning."""
        if interventions is None:
            made = cls.make(**keywords)
            if made:
                warnings.warn(DEPRECATED_KEYWORDS, DeprecationWarning, stacklevel=3)
            return made
        if cls.make(**keywords):
            raise ValueError("give either interventions=... or the keywords ablate/positional, not both")
        if not isinstance(interventions, Interventions):
            raise ValueError(f"interventions must be an Interventions value, got {type(interventions).__name__}")
        return interventions

    def with_change(self, change: Change) -> Interventions:
        """This value with `change` in its slot (replacing the one there)."""
        return Interventions.of(*(c for c in self.changes if c.slot != change.slot), change)

    def get(self, kind: type[Change]) -> Change | None:
        return next((c for c in self.changes if isinstance(c, kind)), None)

    def __bool__(self) -> bool:
        return any(self.changes)

    # -- the keyword view (what callers read today) -------------------------------------------------------------
    @property
    def ablate(self) -> frozenset[tuple[str, int, int]]:
        found = self.get(HeadsOff)
        return found.heads if found else frozenset()

    @property
    def per_row(self) -> tuple[frozenset[tuple[str, int, int]], ...]:
        found = self.get(HeadsOff)
        return found.per_row if found else ()

    @property
    def positional(self) -> str | None:
        return next((getattr(c, "positional", None) for c in self.changes if c.slot == "positions"), None)

    @property
    def shift(self) -> int:
        return next((c.shift for c in self.changes if hasattr(c, "shift")), 1)

    @property
    def seed(self) -> int:
        return next((c.seed for c in self.changes if hasattr(c, "seed")), 0)

    def with_rows(self, rows: Iterable[frozenset[tuple[str, int, int]]]) -> Interventions:
        """This change in every row, plus each batch row's own switched-off heads (head importance)."""
        return self.with_change(HeadsOff(self.ablate, per_row=tuple(rows)))

    # -- the forward pass ----------------------------------------------------------------------------------------
    def check(self, model: nn.Module, lengths: Iterable[int] = ()) -> None:
        """ValueError when a change does not fit this model, or sequences of these lengths."""
        lengths = list(lengths)
        for change in self.changes:
            change.check(model, lengths)

    @property
    def needs_full_prefix(self) -> bool:
        """True when a decoding step must re-run the whole prefix (no key/value cache)."""
        return any(c.needs_full_prefix for c in self.changes)

    def limit_steps(self, model: nn.Module, limit: int) -> int:
        for change in self.changes:
            limit = change.limit_steps(model, limit)
        return limit

    def at(self, point: str) -> bool:
        """Whether some change changes this hook point (model/interventions/base.py)."""
        return any(point in c.points for c in self.changes)

    def touches(self, kind: str, layer: int) -> bool:
        return any(c.touches(kind, layer) for c in self.changes)

    def heads(self, kind: str, layer: int, output: torch.Tensor) -> torch.Tensor:
        for change in self.changes:
            output = change.change_heads(kind, layer, output)
        return output

    def rows(self, module: nn.Module, offset: int, length: int) -> torch.Tensor:
        """The (length, D) positional rows to add instead of module.rows(offset, length)."""
        rows = module.rows(offset, length)
        for change in self.changes:
            rows = change.change_rows(module, offset, rows)
        return rows

    def positions(self, positions: torch.Tensor) -> torch.Tensor:
        """The (T,) position indices a rope / alibi / relative model uses instead of offset .. offset+T-1."""
        for change in self.changes:
            positions = change.change_positions(positions)
        return positions

    # -- how it is written ---------------------------------------------------------------------------------------
    def describe(self) -> dict:
        """JSON-ready record of what was changed ({} for nothing), for Capture.interventions and downloads."""
        out: dict = {}
        for change in self.changes:
            out.update(change.describe())
        return out

    @classmethod
    def from_describe(cls, record: Mapping[str, Any]) -> Interventions:
        """The value a download's record names (the inverse of describe)."""
        return cls.of(*(kind.from_describe(record) for kind in KIND_CLASSES.values()))

    def to_url(self, prefix: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for change in self.changes:
            out.update(change.to_url(prefix))
        return out

    @staticmethod
    def url_keys(prefix: str) -> tuple[str, ...]:
        """Every URL key some kind may write under this prefix."""
        return tuple(dict.fromkeys(k for kind in KIND_CLASSES.values() for k in kind.url_keys(prefix)))

    @classmethod
    def from_url(
        cls, params: Mapping[str, str], prefix: str, model: nn.Module | None = None
    ) -> tuple[Interventions, bool]:
        """(the value a link names, whether something in it was left out: not in a form read here, or not in this
        model)."""
        found, dropped = [], False
        for kind in KIND_CLASSES.values():
            change, bad = kind.from_url(params, prefix, model)
            found.append(change)
            dropped = dropped or bad
        return cls.of(*found), dropped

    def label(self) -> str:
        """What is changed, in the current language: "positions shifted by 3, 2 heads switched off"."""
        parts = [c.label() for c in self.changes]
        if not parts:
            return ""
        words = parts[0]
        for part in parts[1:]:
            words = _("{change}, {other_change}").format(change=words, other_change=part)
        return words


NONE = Interventions()
