"""Every intervention kind, by name, in the order they are applied, written and labelled.
A new kind: one module beside these (a `Change` subclass, `KIND = ...`) and one line here."""

from __future__ import annotations

from ..registry import Provides, Registry
from .base import Change

MODULES = (
    "positions_off",
    "positions_shuffled",
    "positions_shifted",
    "heads_off",
)
REGISTRY = Registry(
    __package__, MODULES, Provides(("KIND",)), entry=lambda module: module.KIND, key=lambda kind: kind.name
)
KIND_CLASSES: dict[str, type[Change]] = REGISTRY.entries
