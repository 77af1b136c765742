"""model/analysis/cpu_share.py: a heavy run lowers its own thread only, and a light run of that thread asks its priority back."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from model.analysis.cpu_share import HEAVY_NICE, HEAVY_SHARE, share_cpu, thread_nice

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread priorities are Linux's")


def in_thread(fn):
    """Run fn in a fresh thread (its priority dies with it); return what it returned."""
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", fn()))
    t.start()
    t.join()
    return out["r"]


def test_heavy_work_lowers_only_its_own_thread():
    base = thread_nice(os.getpid())

    def heavy():
        other = threading.Event()
        seen = {}

        def neighbour():
            seen["nice"] = thread_nice()
            other.set()

        was_heavy = share_cpu(work_bytes=64 * 2**20, budget_bytes=256 * 2**20)  # a quarter of the budget: heavy
        mine = thread_nice()
        threading.Thread(target=neighbour).start()
        other.wait(10)
        return was_heavy, mine, seen["nice"]

    was_heavy, mine, neighbour = in_thread(heavy)
    assert was_heavy and mine == max(HEAVY_NICE, base)
    assert neighbour == mine  # a thread started by a lowered thread inherits its priority, as Linux does
    assert thread_nice(os.getpid()) == base  # the process (its main thread) and so every other session: untouched


def test_light_work_stays_at_the_process_priority():
    base = thread_nice(os.getpid())
    heavy, nice = in_thread(
        lambda: (share_cpu(work_bytes=256 * 2**20 // HEAVY_SHARE, budget_bytes=256 * 2**20), thread_nice())
    )
    assert not heavy and nice == base  # exactly 1/HEAVY_SHARE of the budget is still light


@pytest.mark.skipif(os.geteuid() != 0, reason="raising a priority back needs privileges (or RLIMIT_NICE)")
def test_a_light_run_after_a_heavy_one_gets_the_priority_back():
    base = thread_nice(os.getpid())

    def heavy_then_light():
        share_cpu(2**30, 2**28)
        lowered = thread_nice()
        share_cpu(1, 2**28)
        return lowered, thread_nice()

    lowered, back = in_thread(heavy_then_light)
    assert lowered == max(HEAVY_NICE, base) and back == base
