"""Every attribution method, by name, in the page's order: a new method is one module beside this one and one line
in MODULES."""

from __future__ import annotations

import importlib
from types import ModuleType

MODULES = ("rollout", "flow", "grad_x_input", "integrated_gradients", "occlusion")
METHODS: dict[str, ModuleType] = {}
for _module in MODULES:
    _found = importlib.import_module(f"{__package__}.{_module}")
    METHODS[_found.NAME] = _found
