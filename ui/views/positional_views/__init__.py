"""The app half of each positional kind (model/network/position_kinds/ holds the library half): the module its kind
names in APP, found by the kinds' registry, with

    mine(session, cfg, length)   what the positional page's "This model & input" view says of a model of this kind
    similarity(model, positions) its map in the six kinds side by side
    view(session, d_model, base) optional: a view of its own on the positional page (its title: the kind's TITLE)
    INSIDE_NOTE                  optional: the Inside page's line where the kind changes q and k (RoPE)

The pages read them through `of(kind)` and VIEWS; none names a kind."""

from __future__ import annotations

from types import ModuleType

from model.network.position_kinds.registry import REGISTRY

MODULES: dict[str, ModuleType] = REGISTRY.apps()
VIEWS: dict[str, ModuleType] = {name: m for name, m in MODULES.items() if hasattr(m, "view")}


def of(kind: str) -> ModuleType:
    return MODULES[kind]
