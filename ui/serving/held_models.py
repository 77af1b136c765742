"""Models a visitor brought (a server folder, an upload) live as long as a session shows them.

The demos are loaded once per process and kept (ui/shell/model_picker's cache). A folder or an upload is another
visitor's choice: kept for the process, every one of them would stay in the server's memory after its visitor left
(a wide checkpoint, a tokenizer with a 57 MB vocabulary), and so would every result computed with it. Here such a
model is held by the sessions that showed it: loaded once while any of them is connected (a second session of the
same folder shares it), and released when none is, with every cached result keyed by its model key
(ui/serving/bounded_cache.drop_mentioning). A sweeper thread looks every SWEEP_S seconds; a session whose websocket
reconnects later loads the model again.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import threading
from collections.abc import Callable, Hashable
from typing import Any

from ui.serving.bounded_cache import drop_mentioning

_LOG = logging.getLogger(__name__)
SWEEP_S = 2.0  # seconds between two looks at which sessions are still connected
UNWATCHED = 8  # models kept where no runtime says which sessions are connected


_HELD: dict[Hashable, tuple[Any, str]] = {}  # cache key -> (the loaded model, the model key its results are under)
_SLOTS: dict[tuple[str, str], Hashable] = {}  # (session, picker prefix) -> the cache key of the model it shows there
_LOCK = threading.Lock()
_LOADING: dict[Hashable, threading.Lock] = {}  # one load per key at a time
_sweeper: threading.Thread | None = None


def _session_id() -> str | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None


def _connected() -> Callable[[str], bool] | None:
    """Whether a session's browser is still connected; None outside a served process (AppTest: nothing released)."""
    from streamlit import runtime

    if not runtime.exists():
        return None
    return runtime.get_instance().is_active_session


def hold(cache_key: Hashable, model_key: str, slot: str, load: Callable[[], Any]) -> Any:
    """The model under cache_key, loaded by `load` unless a session holds it already (a second session of the same
    folder shares it); this session shows it in `slot` (the picker's prefix) instead of what it showed there."""
    session = _session_id()
    with _LOCK:
        key_lock = _LOADING.setdefault(cache_key, threading.Lock())
    with key_lock:  # a second session of the same folder waits for the first one's load
        with _LOCK:
            held = _HELD.get(cache_key)
        loaded = held[0] if held is not None else load()
        with _LOCK:  # kept and claimed at once: a sweep in between would release it
            _HELD.pop(cache_key, None)
            _HELD[cache_key] = (loaded, model_key)  # the most recently shown last
            before = _SLOTS.get((session, slot)) if session is not None else None
            if session is not None:
                _SLOTS[(session, slot)] = cache_key
            if _connected() is None:  # no sessions to ask (AppTest, a script): the most recent few, as a cache would
                for old in list(_HELD)[:-UNWATCHED]:
                    _stop_helpers(_HELD.pop(old)[0])
    if session is not None:
        _start_sweeper()
    if before is not None and before != cache_key:
        sweep()  # what this session showed before may be nobody's now
    return loaded


def let_go(slot: str) -> None:
    """This session shows no held model in `slot` any more (a demo was chosen there)."""
    session = _session_id()
    with _LOCK:
        before = _SLOTS.pop((session, slot), None)
    if before is not None:
        sweep()


def sweep(connected: Callable[[str], bool] | None = None) -> list[str]:
    """Release every held model that no connected session shows, with its cached results; their model keys."""
    connected = connected or _connected()
    if connected is None:
        return []
    with _LOCK:
        for gone_slot in [k for k in _SLOTS if not connected(k[0])]:
            del _SLOTS[gone_slot]
        shown = set(_SLOTS.values())
        released = [_HELD.pop(k) for k in [k for k in _HELD if k not in shown]]
        gone = [model_key for _, model_key in released]
        for k in [k for k in _LOADING if k not in _HELD and not _LOADING[k].locked()]:
            del _LOADING[k]
    if gone:
        for loaded, _ in released:
            _stop_helpers(loaded)
        for model_key in gone:
            drop_mentioning(model_key)
        _give_back_memory()
        _LOG.info("released %d model(s) no connected session shows", len(gone))
    return gone


def _stop_helpers(loaded: Any) -> None:
    """A released (model, tokenizer)'s tokenizer helper processes (model/checkpoints/handoff.fence) stop now."""
    from model.checkpoints.handoff import unfence

    tokenizer = loaded[1] if isinstance(loaded, tuple) and len(loaded) == 2 else None
    if hasattr(tokenizer, "source") and hasattr(tokenizer, "target"):
        unfence(tokenizer)


def _give_back_memory() -> None:
    """Collect what the released models leave (their modules may be frozen: ui/serving/long_lived.py), and hand the freed
    heap back to the operating system (glibc keeps it otherwise)."""
    from ui.serving.long_lived import released

    released()
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def _start_sweeper() -> None:
    global _sweeper
    with _LOCK:
        if _sweeper is None:
            _sweeper = threading.Thread(target=_sweep_forever, name="held-models-sweeper", daemon=True)
            _sweeper.start()


def _sweep_forever() -> None:
    global _sweeper
    pause = threading.Event()
    while True:
        pause.wait(SWEEP_S)
        try:
            sweep()
        except Exception:  # noqa: BLE001 - the sweeper must outlive one bad look; the log keeps it
            _LOG.warning("sweeping held models failed", exc_info=True)
        with _LOCK:
            if not _HELD:  # nothing left to watch: the next hold starts a sweeper again
                _sweeper = None
                return


def held_count() -> int:
    with _LOCK:
        return len(_HELD)
