"""Heavy work yields the CPU to light work: a session whose next run is heavy runs at a lower priority.

A server process holds every session of a room; one visitor's long input on a many-headed model (within the work
budget, model/analysis/budget.py) costs seconds of CPU that the other sessions' small runs would otherwise wait behind. Linux
gives every thread its own nice value (setpriority on a thread id), so the script thread of a heavy run is lowered
to HEAVY_NICE before the work starts and the kernel runs the light sessions' threads first; with idle cores the heavy
run loses nothing. A light run of the same thread asks for its priority back (granted to root or with RLIMIT_NICE;
otherwise that one session's thread stays lowered until Streamlit ends it).

Elsewhere than Linux the calls do nothing.
"""

from __future__ import annotations

import os
import sys
import threading

HEAVY_NICE = 10
HEAVY_SHARE = 8  # a run whose work bound exceeds 1/HEAVY_SHARE of the session's work budget is heavy


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
    return heavy
