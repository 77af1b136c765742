"""Every positional kind, by name, in the order the pages list them: a new kind is one module beside this one and
one line in MODULES. KINDS loads the modules on first use (model/network/config.py reads MODULES at import)."""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

MODULES = ("sinusoidal", "learned", "none", "rope", "alibi", "relative")


@cache
def kinds() -> dict[str, ModuleType]:
    """name -> kind module, in MODULES order."""
    found = [importlib.import_module(f"{__package__}.{m}") for m in MODULES]
    return {k.NAME: k for k in found}


def kind(name: str) -> ModuleType:
    """The kind module of a config's `positional` (KeyError: not a registered kind)."""
    return kinds()[name]
