"""Heavy work yields the CPU to light work: a session whose next run is heavy runs at a lower priority.

A server process holds every session of a room; one visitor's long input on a many-headed model (within the work
budget, model/analysis/budget.py) costs seconds of CPU that the other sessions' small runs would otherwise wait behind. Linux
gives every thread its own nice value (setpriority on a thread id), so the script thread of a heavy run is lowered
to HEAVY_NICE before the work starts and the kernel runs the light sessions' threads first; with idle cores the heavy
run loses nothing. A light run of the same thread asks for its priority back (granted to root or with RLIMIT_NICE;
otherwise that one session's thread stays lowered until Streamlit ends it).

Priority alone does not keep a heavy run out of the light ones' way: the sessions share one Python interpreter, and
a lowered thread still takes its turns at the interpreter lock and at torch. So a heavy run also steps aside at
yield points (every module's forward, through torch's global forward pre-hook): while light runs are in progress it waits, at most HEAVY_WAIT times as long as it ran since its last
yield point (it keeps at least 1/(1 + HEAVY_WAIT) of the time: it finishes, later). A run counts as in progress
from share_cpu until run_over (ui/run_app.py calls it when the page's script ends).

Elsewhere than Linux the priority calls do nothing; the yield points work everywhere.
"""

from __future__ import annotations

import os
import sys
import threading
import time

HEAVY_NICE = 10
HEAVY_SHARE = 8  # a run whose work bound exceeds 1/HEAVY_SHARE of the session's work budget is heavy
HEAVY_WAIT = 4  # at a yield point a heavy run waits for light runs up to this many times what it ran since the last
SLICE_S = 0.02  # a heavy run looks at the room at most this often (a yield point before that returns at once)
POLL_S = 0.002  # how often a waiting heavy run looks again

_lock = threading.Lock()
_light: dict[int, threading.Thread] = {}  # light runs in progress in this process, by thread (a dead one is not)
_run = threading.local()  # this thread's run: .heavy, .since (its last yield point)


def _tid() -> int:
    return threading.get_native_id()


def thread_nice(tid: int | None = None) -> int:
    """The nice value of a thread of this process (the calling one by default)."""
    return os.getpriority(os.PRIO_PROCESS, _tid() if tid is None else tid)


def set_heavy(heavy: bool) -> bool:
    """Lower the calling thread to HEAVY_NICE for heavy work, or ask for the process's own priority back.

    Returns whether the thread now runs at the priority asked for."""
    if not sys.platform.startswith("linux"):
        return False
    base = os.getpriority(os.PRIO_PROCESS, os.getpid())  # the main thread's: the process's own priority
    target = max(HEAVY_NICE, base) if heavy else base
    if thread_nice() == target:
        return True
    try:
        os.setpriority(os.PRIO_PROCESS, _tid(), target)
    except OSError:  # raising a priority back needs privileges: the thread stays lowered
        return False
    return True


def share_cpu(work_bytes: int, budget_bytes: int) -> bool:
    """Before a run: heavy (its work bound above 1/HEAVY_SHARE of the budget) lowers this thread, light restores it.

    Returns whether the run counts as heavy."""
    heavy = work_bytes * HEAVY_SHARE > budget_bytes
    set_heavy(heavy)
    begin_run(heavy)
    return heavy


def begin_run(heavy: bool) -> None:
    """This thread's run starts: a light one is counted (heavy runs wait for it), a heavy one yields from now."""
    run_over()
    _run.heavy, _run.since = heavy, time.perf_counter()
    if not heavy:
        with _lock:
            _light[threading.get_ident()] = threading.current_thread()


def run_over() -> None:
    """This thread's run has ended (or was stopped): it no longer counts as light, nor yields as heavy."""
    with _lock:
        _light.pop(threading.get_ident(), None)
    _run.heavy = False


def light_runs() -> int:
    """Light runs in progress in this process (a thread that ended without run_over no longer counts)."""
    with _lock:
        for ident in [i for i, t in _light.items() if not t.is_alive()]:
            del _light[ident]
        return len(_light)


def yield_to_light() -> float:
    """A yield point: in a heavy run, while light runs are in progress, wait (at most HEAVY_WAIT times as long as
    this run ran since its last yield point); elsewhere return at once. Returns the seconds waited."""
    if not getattr(_run, "heavy", False):
        return 0.0
    now = time.perf_counter()
    ran = now - _run.since
    if ran < SLICE_S:
        return 0.0
    deadline = now + HEAVY_WAIT * ran
    while light_runs() and time.perf_counter() < deadline:
        time.sleep(POLL_S)
    _run.since = time.perf_counter()
    return _run.since - now


_installed = False


def install_yield_points() -> None:
    """Every module's forward, in every thread of this process, starts with a yield point (once per process)."""
    global _installed
    if _installed:
        return
    from torch.nn.modules.module import register_module_forward_pre_hook

    register_module_forward_pre_hook(_before_forward)
    _installed = True


def _before_forward(module, args) -> None:  # returns None: the module's inputs stay as they are
    yield_to_light()
