"""A long job's units on several forked helpers (ui/serving/fork_map.py): every unit's answer once, from more than
one process, the helpers gone afterwards; a failing unit's exception raised in the caller; one process: here."""

from __future__ import annotations

import os

import pytest

from ui.serving.fork_map import CORES_ENV, fork_map, worker_cores


def square_and_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_every_unit_is_answered_once_by_the_helpers_which_are_gone_afterwards():
    units = list(range(12))
    got = dict(fork_map(square_and_pid, units, processes=2))
    assert sorted(got) == units
    assert all(got[i][0] == i * i for i in units)
    pids = {pid for _, pid in got.values()}
    assert len(pids) == 2 and os.getpid() not in pids
    assert all(gone(pid) for pid in pids)


def fails_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("unit", x)
    return x


def test_a_failing_unit_raises_its_exception_here():
    with pytest.raises(ValueError) as err:
        list(fork_map(fails_on_three, list(range(6)), processes=2))
    assert err.value.args == ("unit", 3)


def test_one_process_runs_the_units_here_in_order():
    got = list(fork_map(square_and_pid, [3, 1, 2], processes=1))
    assert got == [(0, (9, os.getpid())), (1, (1, os.getpid())), (2, (4, os.getpid()))]


def test_the_operator_sets_the_cores(monkeypatch):
    monkeypatch.setenv(CORES_ENV, "3")
    assert worker_cores() == 3
    monkeypatch.delenv(CORES_ENV)
    default = worker_cores()
    monkeypatch.setenv(CORES_ENV, "0")  # not a positive number: the default
    assert worker_cores() == default and 1 <= default <= 4


def allocate(n: int) -> int:
    """n bytes of new address space (a mapping of its own: a heap's free chunks, inherited from a busy test process,
    could hold an allocation without growing it); over the cap, MemoryError as any allocation's."""
    import mmap

    try:
        with mmap.mmap(-1, n):
            return n
    except OSError as err:
        raise MemoryError(n) from err


def two_helpers_allocate(fraction: float) -> tuple[int, int, list[int]]:
    """In the worker: (the room left under its cap, n, what two helpers allocating n bytes each answered), n being
    `fraction` of half that room. The room read here from the kernel (the cap, and the size in /proc), not by the
    code under test."""
    import resource

    with open("/proc/self/statm") as statm:
        size = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    room = resource.getrlimit(resource.RLIMIT_AS)[0] - size
    n = int(fraction * room / 2)
    return room, n, sorted(answer for _, answer in fork_map(allocate, [n, n], processes=2))


def test_the_helpers_share_the_workers_memory_cap_instead_of_each_having_it():
    """In a limited worker (its address-space cap: 400 MB above its size when it starts), two helpers may add half
    the room left under that cap each: 60% of a half each fits; 90% of the whole room each, which would fit if each
    helper had the worker's cap (the fault this guards against), is refused as the worker's own would be. The room is
    measured in the worker when the helpers start, and each helper maps new memory: a full run once let 70% of the
    room each through, most likely from free heap inherited from the test process, which bytearray reused."""
    from ui.serving.workers import Limits, WorkerStopped, run_limited

    limits = Limits(memory=400 * 2**20, deadline=60)
    room, n, answers = run_limited(two_helpers_allocate, 0.6, limits=limits)
    assert room > 200 * 2**20 and answers == [n, n]  # the cap holds most of its 400 MB of room
    try:
        room, n, _ = run_limited(two_helpers_allocate, 1.8, limits=limits)
    except WorkerStopped:
        return
    pytest.fail(f"two helpers of {n} bytes each were not refused under a room of {room} bytes")
