"""Package names loaded on first use (PEP 562), so that a package's __init__ imports none of its children.

Streamlit runs the page scripts of a cold server's first sessions in threads at once, and each imports a different
part of the library first. When a package's __init__ imported its children, one thread inside `model/__init__`
could wait for `model.analysis` while another, holding `model.analysis`, waited for `model` to finish: Python's
_DeadlockError on the page. With nothing imported by the packages' __init__ and no import cycle among the modules
(tests/test_import_graph.py), no thread can hold one module while waiting for one the other holds.

    __getattr__, __dir__ = exports(__name__, {"capture": ".analysis.capture", ...}, globals())
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def exports(package: str, names: Mapping[str, str], namespace: dict) -> tuple[Callable, Callable]:
    """A module __getattr__ that imports `names[name]` (a module relative to `package`, or "module:attribute" for a
    name the module holds under another) on first use and keeps the value in the package's namespace, and the
    matching __dir__."""

    def __getattr__(name: str):
        where = names.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        value = getattr(importlib.import_module(module, package), attribute or name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *names})

    return __getattr__, __dir__
