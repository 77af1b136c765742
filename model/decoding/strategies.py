"""Every decoding strategy, by name: a module with NAME and
`decode(model, tokenizer, source, *, interventions=NONE, max_len=None, **settings)` -> a trace, whose policy runs
in the one loop (core.run). A new strategy: one module beside these and one line here."""

from __future__ import annotations

import importlib
from types import ModuleType

MODULES = (  # the decoding page's menu follows this order
    "greedy",
    "forced",
    "beam",
    "sampling",
)
STRATEGIES: dict[str, ModuleType] = {}
for _module in MODULES:
    _found = importlib.import_module(f"{__package__}.{_module}")
    STRATEGIES[_found.NAME] = _found
