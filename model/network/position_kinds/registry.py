"""Every positional kind, by name, in the order the pages list them: a new kind is one module beside this one (and
its app half, named in its APP) and one line in MODULES. The modules load on first use (model/network/config.py
reads MODULES at import)."""

from __future__ import annotations

from types import ModuleType

from ...registry import Provides, Registry

MODULES = ("sinusoidal", "learned", "none", "rope", "alibi", "relative")
REGISTRY = Registry(
    __package__,
    MODULES,
    Provides(
        ("NAME", "TITLE", "DESCRIPTION", "INSIDE_ATTENTION", "PACK_TEXT", "APP", "make"), app=("mine", "similarity")
    ),
)


def kinds() -> dict[str, ModuleType]:
    """name -> kind module, in MODULES order."""
    return REGISTRY.entries


def kind(name: str) -> ModuleType:
    """The kind module of a config's `positional` (KeyError: not a registered kind)."""
    return REGISTRY.lookup(name)
