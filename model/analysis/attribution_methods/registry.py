"""Every attribution method, by name, in the page's order: a new method is one module beside this one and one line
in MODULES (what a module provides: this package's docstring). The page's controls, matrix and download read it."""

from __future__ import annotations

from types import ModuleType

from ...registry import Provides, Registry

MODULES = ("rollout", "flow", "grad_x_input", "integrated_gradients", "occlusion")
REGISTRY = Registry(
    __package__, MODULES, Provides(("NAME", "TITLE", "EXPLANATION", "SETTINGS", "CHEAP", "compute", "plan"))
)
METHODS: dict[str, ModuleType] = REGISTRY.entries
