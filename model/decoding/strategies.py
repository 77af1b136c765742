"""Every decoding strategy, by name: a module with NAME, TITLE, LINK (its value in the page's link, or None: not in
the menu), SETTINGS and `decode(model, tokenizer, source, *, interventions=NONE, max_len=None, **settings)` -> a
trace, whose policy runs in the one loop (core.run); a strategy in the menu names its app half in APP (a module
with `view(session, strategy, changes)`). A new strategy: one module beside these (and its view) and one line here."""

from __future__ import annotations

from types import ModuleType

from ..registry import Provides, Registry

MODULES = (  # the decoding page's menu follows this order
    "greedy",
    "forced",
    "beam",
    "sampling",
)
REGISTRY = Registry(__package__, MODULES, Provides(("NAME", "TITLE", "LINK", "SETTINGS", "decode"), app=("view",)))
STRATEGIES: dict[str, ModuleType] = REGISTRY.entries
