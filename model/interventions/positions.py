"""What the three position kinds share: one slot ("positions"), the ROWS and POSITIONS hook points, and the
written forms `{"positional": name, ...}` (downloads) and `<prefix>_pos=name` (URL: pe_pos=off on the
positional page). Each kind says what it does to the rows and the indices, and any setting of its own."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from torch import nn

from .base import POSITIONS, ROWS, Change, whole_number


@dataclass(frozen=True)
class PositionChange(Change):
    slot: ClassVar[str] = "positions"
    points: ClassVar[frozenset[str]] = frozenset({ROWS, POSITIONS})
    positional: ClassVar[str] = ""  # its value of capture(..., positional=...)
    setting: ClassVar[str | None] = None  # the keyword / download field / URL suffix of its one setting, if any
    title: ClassVar[str] = ""  # the positional page's control (marked with N_)
    what: ClassVar[str] = ""  # "with ..." in the page's sentences, {k} its setting's value (marked with N_)

    @classmethod
    def example(cls, model: nn.Module) -> PositionChange:
        return cls.from_keywords(positional=cls.positional, **({cls.setting: 3} if cls.setting else {}))

    @classmethod
    def from_keywords(cls, **keywords: Any) -> PositionChange | None:
        if cls.setting and cls.setting in keywords:  # checked even when another kind is asked for, as ever
            whole_number(cls.setting, keywords[cls.setting])
        if keywords.get("positional") != cls.positional:
            return None
        return cls(keywords[cls.setting]) if cls.setting else cls()

    def describe(self) -> dict:
        out: dict = {"positional": self.positional}
        if self.setting:
            out[self.setting] = getattr(self, self.setting)
        return out

    @classmethod
    def from_describe(cls, record: Mapping[str, Any]) -> PositionChange | None:
        if record.get("positional") != cls.positional:
            return None
        return cls.from_keywords(positional=cls.positional, **{k: v for k, v in record.items() if k == cls.setting})

    def to_url(self, prefix: str) -> dict[str, str]:
        out = {f"{prefix}_pos": self.positional}
        if self.setting:
            out[f"{prefix}_{self.setting}"] = str(getattr(self, self.setting))
        return out

    @classmethod
    def url_keys(cls, prefix: str) -> tuple[str, ...]:
        return (f"{prefix}_pos",) + ((f"{prefix}_{cls.setting}",) if cls.setting else ())

    @classmethod
    def from_url(
        cls, params: Mapping[str, str], prefix: str, model: nn.Module | None = None
    ) -> tuple[PositionChange | None, bool]:
        if params.get(f"{prefix}_pos") != cls.positional:
            return None, False
        if not cls.setting:
            return cls(), False
        raw = params.get(f"{prefix}_{cls.setting}", "")
        try:
            return cls.from_keywords(positional=cls.positional, **{cls.setting: int(raw)}), False
        except ValueError:  # not a number, or out of range: the link names something this kind cannot take
            return None, True
