"""Results that depend only on a checkpoint, computed once per machine and kept on disk under the checkpoint's
content digest, with diskcache.

    value = on_disk(folder, "exact_match", (n,), compute)

The key is (VERSION, sha256 of the folder's files - names, sizes and bytes -, the view's name, its parameters):
a checkpoint changed in place gets a new digest, the same checkpoint copied elsewhere (another app process,
another machine sharing the folder) finds its results. Values are pickled by diskcache into a folder this process
creates private (0700): $VIZ_CACHE_DIR, default ~/.cache/transformer-viz/results, at most $VIZ_CACHE_MB (default
512 MB; least recently stored first out). Several app processes share it safely (diskcache locks with SQLite).

Only the app's own results go in, keyed by digests it computed: nothing a visitor sends is unpickled from here.
The in-memory caches (ui/serving/caches.py) stay in front: this is what a new process, or one whose memory cache let the
result go, reads instead of computing again.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
VERSION = 1  # bump when a cached record's meaning changes
ENV_DIR, ENV_MB = "VIZ_CACHE_DIR", "VIZ_CACHE_MB"
DEFAULT_MB = 512
_MISSING = object()
SHIPPED = "results.json"  # a shipped demo's precomputed results, beside its weights (scripts/precompute.py)
_lock = threading.Lock()
_opened: dict[str, Any] = {}
_digests: dict[tuple, str] = {}


def cache_dir() -> Path:
    return Path(os.environ.get(ENV_DIR) or Path.home() / ".cache" / "transformer-viz" / "results")


def _cache():
    import diskcache

    where = cache_dir()
    with _lock:
        if str(where) not in _opened:
            where.mkdir(parents=True, exist_ok=True, mode=0o700)
            try:
                mb = int(os.environ.get(ENV_MB, DEFAULT_MB))
            except ValueError:
                mb = DEFAULT_MB
            _opened[str(where)] = diskcache.Cache(str(where), size_limit=max(1, mb) * 2**20)
        return _opened[str(where)]


def folder_digest(folder: str | Path) -> str:
    """sha256 over a checkpoint's regular files (relative name, size, bytes), in name order; remembered per
    (folder, every file's size and mtime) so that an unchanged folder is read once per process."""
    folder = Path(folder)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and p.name != SHIPPED)
    stamp = (
        str(folder.resolve()),
        tuple((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns) for p in files),
    )
    if stamp in _digests:
        return _digests[stamp]
    h = hashlib.sha256()
    for p in files:
        h.update(str(p.relative_to(folder)).encode() + b"\0" + str(p.stat().st_size).encode() + b"\0")
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    _digests[stamp] = h.hexdigest()
    return _digests[stamp]


def on_disk(folder: str | Path, name: str, params: Hashable, compute: Callable[[], T]) -> T:
    """The result of `compute` for this checkpoint folder, view name and parameters: read from disk when stored,
    else computed, stored and returned. An error from compute is raised and nothing is stored."""
    key = (VERSION, folder_digest(folder), name, params)
    cache = _cache()
    value = cache.get(key, default=_MISSING)
    if value is not _MISSING:
        return value
    value = compute()
    cache.set(key, value)
    return value


def stored(folder: str | Path, name: str, params: Hashable) -> bool:
    """Whether on_disk would read this result without computing it."""
    return (VERSION, folder_digest(folder), name, params) in _cache()


def demo_folder(model_key: str) -> Path | None:
    """The folder of a shipped demo from a session's model key ("demo:NAME", with or without "|heads=..."), else
    None (uploads and server paths are not kept on disk here)."""
    from model.checkpoints.demos import list_demos

    base = model_key.split("|", 1)[0]
    if not base.startswith("demo:") or "|" in model_key:
        return None
    return next((d.path for d in list_demos() if d.name == base[5:]), None)


def shipped_key(name: str, params: Hashable) -> str:
    return f"{name} {params!r}"


def shipped(folder: Path, name: str, params: Hashable) -> Any:
    """The JSON value a shipped demo's results.json holds for (name, params), or None. Only when the file says it
    was computed from these very files (their digest): a retrained demo computes again."""
    from model.checkpoints.safe_io import read_json

    path = folder / SHIPPED
    if not path.is_file():
        return None
    try:
        data = read_json(path)
    except Exception:  # noqa: BLE001 - a damaged file is as good as none
        return None
    if not isinstance(data, dict) or data.get("digest") != folder_digest(folder) or data.get("version") != VERSION:
        return None
    return (data.get("results") or {}).get(shipped_key(name, params))


def checkpoint_cached(
    model_key: str, name: str, params: Hashable, compute: Callable[[], T], decode: Callable[[Any], T] | None = None
) -> T:
    """on_disk for a shipped demo's model key, read from the demo's results.json first when it ships the result
    (decode: its JSON value -> the record); other models compute (their in-memory caches still hold them)."""
    folder = demo_folder(model_key)
    if folder is None:
        return compute()
    if decode is not None and (value := shipped(folder, name, params)) is not None:
        return decode(value)
    return on_disk(folder, name, params, compute)
