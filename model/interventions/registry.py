"""Every intervention kind, by name, in the order they are applied, written and labelled.
A new kind: one module beside these (a `Change` subclass, `KIND = ...`) and one line here."""

from __future__ import annotations

import importlib

from .base import Change

MODULES = (
    "positions_off",
    "positions_shuffled",
    "positions_shifted",
    "heads_off",
)
KIND_CLASSES: dict[str, type[Change]] = {}
for _module in MODULES:
    _kind = importlib.import_module(f"{__package__}.{_module}").KIND
    KIND_CLASSES[_kind.name] = _kind
