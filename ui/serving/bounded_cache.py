"""A process-wide cache bounded by entries and by bytes, for what every session shares (captures, traces, HTML).

st.cache_data bounds only the number of entries: 64 captures of a base model at 128 tokens are gigabytes.
BoundedCache counts the bytes of what it holds (numpy arrays' nbytes, strings' and bytes' lengths) and
drops the least recently used entries until both bounds hold. It hands every caller the same object
(no copy per run, unlike st.cache_data): numpy arrays in a value are made read-only before it is shared.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import numpy as np

T = TypeVar("T")
_ALL: weakref.WeakSet[BoundedCache] = weakref.WeakSet()  # every cache of the process (drop_mentioning)


_PLAIN = frozenset({str, int, float, bool, type(None)})  # values with nothing inside to count or make read-only


def _plain(items: list | tuple) -> frozenset:
    """The types of a list's items when they are all plain values (a hypothesis's tokens or ids), else empty:
    such a list is counted and frozen without one call per item (a long beam search holds millions)."""
    kinds = frozenset(map(type, items))
    return kinds if kinds <= _PLAIN else frozenset()


def nbytes(value: Any, _depth: int = 0) -> int:
    """Bytes held by a value: arrays' nbytes, str/bytes lengths, summed through dataclasses, lists, tuples, dicts."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    held = getattr(value, "nbytes", None)  # a record that counts itself (a LazyCapture), a torch tensor
    if isinstance(held, int) and not isinstance(held, bool):
        return held
    if _depth > 8:  # records here are shallow; a deeper value is counted by its own size only
        return sys.getsizeof(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(nbytes(v, _depth + 1) for v in vars(value).values())
    if isinstance(value, (list, tuple)):
        kinds = _plain(value)
        if kinds == {str}:  # as the items one by one: their UTF-8 bytes
            return sys.getsizeof(value) + len("".join(value).encode("utf-8", "surrogatepass"))
        if kinds and str not in kinds:
            return sys.getsizeof(value) + sum(map(sys.getsizeof, value))
        return sys.getsizeof(value) + sum(nbytes(v, _depth + 1) for v in value)
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(nbytes(k, _depth + 1) + nbytes(v, _depth + 1) for k, v in value.items())
    return sys.getsizeof(value)


def freeze(value: Any, _depth: int = 0) -> None:
    """Make every numpy array inside a value read-only: a shared value must never be changed by one session."""
    if isinstance(value, np.ndarray):
        value.setflags(write=False)
    elif _depth <= 8 and dataclasses.is_dataclass(value) and not isinstance(value, type):
        for v in vars(value).values():
            freeze(v, _depth + 1)
    elif _depth <= 8 and isinstance(value, (list, tuple)) and not _plain(value):
        for v in value:
            freeze(v, _depth + 1)
    elif _depth <= 8 and isinstance(value, dict):
        for v in value.values():
            freeze(v, _depth + 1)


def _mentions(key: Hashable, part: str, _depth: int = 0) -> bool:
    if isinstance(key, str):
        return key == part
    return _depth < 4 and isinstance(key, tuple) and any(_mentions(k, part, _depth + 1) for k in key)


def drop_mentioning(part: str) -> int:
    """Drop, from every BoundedCache of the process, the values whose key holds `part` (a model key: its results
    go with the model, ui/serving/held_models.py); how many."""
    return sum(cache.drop(lambda key: _mentions(key, part)) for cache in list(_ALL))


class BoundedCache(Generic[T]):
    """Least-recently-used values by key, at most `max_entries` of them and `max_bytes` bytes in all.

    Thread-safe; one computation per key at a time (a second session asking for the same key while the
    first computes waits for it instead of computing it again). A value larger than max_bytes on its own
    is returned but not kept.
    """

    def __init__(self, name: str, max_entries: int, max_bytes: int, size: Callable[[Any], int] = nbytes):
        if max_entries < 1 or max_bytes < 1:
            raise ValueError(f"{name}: max_entries and max_bytes must be positive")
        _ALL.add(self)
        self.name, self.max_entries, self.max_bytes, self._size = name, max_entries, max_bytes, size
        self._values: OrderedDict[Hashable, tuple[T, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._computing: dict[Hashable, threading.Lock] = {}

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._values

    @property
    def bytes(self) -> int:
        """Bytes held now (as counted by `size`)."""
        return self._bytes

    def lookup(self, key: Hashable) -> tuple[bool, T | None]:
        """(True, the value) when key is held (now the most recently used), else (False, None); computes nothing."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return True, self._values[key][0]
            return False, None

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The cached value for key, computing (and keeping) it when it is not there."""
        found, value = self.lookup(key)
        if found:
            return value  # type: ignore[return-value]
        with self._lock:
            key_lock = self._computing.setdefault(key, threading.Lock())
        try:
            with key_lock:
                found, value = self.lookup(key)  # computed by another session while this one waited
                if found:
                    return value  # type: ignore[return-value]
                value = compute()
                self.put(key, value)
                return value
        finally:
            with self._lock:
                if self._computing.get(key) is key_lock and not key_lock.locked():
                    del self._computing[key]

    def put(self, key: Hashable, value: T) -> None:
        """Keep value under key (read-only from now on), dropping the least recently used beyond the bounds."""
        size = int(self._size(value))
        freeze(value)
        with self._lock:
            if key in self._values:
                self._bytes -= self._values.pop(key)[1]
            if size > self.max_bytes:
                return
            self._values[key] = (value, size)
            self._bytes += size
            while len(self._values) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, dropped) = self._values.popitem(last=False)
                self._bytes -= dropped

    def drop(self, where: Callable[[Hashable], bool]) -> int:
        """Drop every value whose key satisfies `where`; how many."""
        with self._lock:
            keys = [k for k in self._values if where(k)]
            for k in keys:
                self._bytes -= self._values.pop(k)[1]
        return len(keys)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._bytes = 0
