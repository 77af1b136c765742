"""The one registry helper of every extension point (checkpoint formats, decoding strategies, positional kinds,
attribution methods, intervention kinds).

An extension point is a `Registry`: its package, `MODULES` (one name per entry, in the order the pages list them: a
new entry is one module there and one line in MODULES) and a `Provides`, the typed description of what every entry
provides: the names its library module defines and, where the point has an app half, the names its app module
defines. Modules are imported on first use and checked against `Provides`: an entry that lacks a name fails with
the module and the names it lacks, before any page uses it.

The app half of an entry (its view, what a page says of it) is the module its library module names in `APP` (a
dotted module path, as a plugin's entry point is written): the registry finds it, not the file name, and only the
app asks for it (`app`, `apps`), so the library never imports the app.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class Provides:
    """What every entry of an extension point provides."""

    library: tuple[str, ...]  # names its library module defines (e.g. NAME, TITLE, decode, SETTINGS)
    app: tuple[str, ...] = ()  # names its app module defines, where it names one in APP (e.g. view)


def missing(module: ModuleType, names: tuple[str, ...]) -> list[str]:
    return [n for n in names if not hasattr(module, n)]


class Registry(Mapping[str, Any]):
    """name -> entry of one extension point, in MODULES order (a read-only mapping, loaded on first use).

    package: the library modules' package; modules: their names in it (MODULES); provides: what each provides;
    entry: what the registry hands out for a module (the module itself, or e.g. an intervention kind's class);
    key: the entry's name (its NAME)."""

    def __init__(
        self,
        package: str,
        modules: tuple[str, ...],
        provides: Provides,
        *,
        entry: Callable[[ModuleType], Any] = lambda module: module,
        key: Callable[[Any], str] = lambda entry: entry.NAME,
    ) -> None:
        self.package, self.modules, self.provides = package, tuple(modules), provides
        self._entry, self._key = entry, key

    # `libraries` and `entries` are computed on first use and kept, without a lock: functools.cached_property (Python
    # 3.11) holds one lock for every instance while it computes, and the computation imports modules. A cold server's
    # page threads then deadlock: one holds the lock and waits for a module another thread is importing, which waits
    # for the lock to read another registry. Two threads that compute the same registry at once import the same
    # modules (each import once, under Python's own locks) and keep equal values.
    @property
    def libraries(self) -> dict[str, ModuleType]:
        """name -> library module, in MODULES order; TypeError names a module that lacks what the point needs."""
        if (found := self.__dict__.get("_libraries")) is None:
            found = self.__dict__["_libraries"] = self._load()
        return found

    @property
    def entries(self) -> dict[str, Any]:
        if (found := self.__dict__.get("_entries")) is None:
            found = self.__dict__["_entries"] = {key: self._entry(module) for key, module in self.libraries.items()}
        return found

    def _load(self) -> dict[str, ModuleType]:
        found: dict[str, ModuleType] = {}
        for name in self.modules:
            module = importlib.import_module(f"{self.package}.{name}")
            if lacks := missing(module, self.provides.library):
                raise TypeError(f"{module.__name__} lacks {', '.join(lacks)}")
            key = self._key(self._entry(module))
            if key in found:
                raise ValueError(f"{module.__name__} and {found[key].__name__} are both named {key!r}")
            found[key] = module
        return found

    def __getitem__(self, name: str) -> Any:
        return self.entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.modules)

    def lookup(self, name: str) -> Any:
        """The entry called `name` (KeyError: not registered)."""
        return self.entries[name]

    def app(self, name: str) -> ModuleType | None:
        """The app half of entry `name`: the module its library module names in APP (None: it has none)."""
        path = getattr(self.libraries[name], "APP", None)
        if path is None:
            return None
        module = importlib.import_module(path)
        if lacks := missing(module, self.provides.app):
            raise TypeError(f"{module.__name__} (the app half of {name!r}) lacks {', '.join(lacks)}")
        return module

    def apps(self) -> dict[str, ModuleType]:
        """name -> app module of every entry that has one, in MODULES order."""
        return {name: module for name in self.libraries if (module := self.app(name)) is not None}
