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


def run_in_thread(fn) -> tuple[threading.Thread, threading.Event]:
    """Start fn in a thread; the event is set when it has returned."""
    returned = threading.Event()
    t = threading.Thread(target=lambda: (fn(), returned.set()), daemon=True)
    t.start()
    return t, returned


@pytest.fixture
def light_run():
    """A light run in progress on its own thread until the returned event is set."""
    from model.analysis import cpu_share

    started, end = threading.Event(), threading.Event()

    def light():
        cpu_share.begin_run(heavy=False)
        started.set()
        end.wait(60)
        cpu_share.run_over()

    t, _ = run_in_thread(light)
    started.wait(10)
    yield end
    end.set()
    t.join(10)


def test_a_heavy_run_waits_at_a_yield_point_until_the_light_run_is_over(light_run, monkeypatch):
    from model.analysis import cpu_share

    monkeypatch.setattr(cpu_share, "SLICE_S", 0.0)
    monkeypatch.setattr(cpu_share, "HEAVY_WAIT", 10**6)  # no bound within the test: it waits for the light run
    assert cpu_share.light_runs() == 1

    def heavy():
        cpu_share.begin_run(heavy=True)
        cpu_share.yield_to_light()
        cpu_share.run_over()

    t, returned = run_in_thread(heavy)
    assert not returned.wait(0.5)  # still waiting while the light run is in progress
    light_run.set()
    assert returned.wait(10)
    t.join(10)
    assert cpu_share.light_runs() == 0


def test_the_wait_is_bounded_by_what_the_heavy_run_ran(light_run, monkeypatch):
    from model.analysis import cpu_share

    monkeypatch.setattr(cpu_share, "SLICE_S", 0.0)
    monkeypatch.setattr(cpu_share, "HEAVY_WAIT", 0)  # it may wait 0 times what it ran: it goes on at once
    waited = []

    def heavy():
        cpu_share.begin_run(heavy=True)
        waited.append(cpu_share.yield_to_light())
        cpu_share.run_over()

    t, returned = run_in_thread(heavy)
    assert returned.wait(10)  # the light run is still in progress
    assert cpu_share.light_runs() == 1 and waited


def test_light_runs_never_wait(light_run, monkeypatch):
    from model.analysis import cpu_share

    monkeypatch.setattr(cpu_share, "SLICE_S", 0.0)
    out = []

    def light():
        cpu_share.begin_run(heavy=False)
        out.append((cpu_share.light_runs(), cpu_share.yield_to_light()))
        cpu_share.run_over()

    t, returned = run_in_thread(light)
    assert returned.wait(10)
    assert out == [(2, 0.0)]  # two light runs in progress, and this one went on without a wait
    assert cpu_share.light_runs() == 1


def test_every_module_forward_is_a_yield_point(monkeypatch):
    import torch

    from model.analysis import cpu_share

    cpu_share.install_yield_points()
    calls = []
    monkeypatch.setattr(cpu_share, "yield_to_light", lambda: calls.append(threading.get_ident()) or 0.0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU())
    out = net(torch.ones(2, 3))
    assert out.shape == (2, 4)  # the hook leaves the inputs as they are
    assert calls == [threading.get_ident()] * 3  # the Sequential and its two modules
