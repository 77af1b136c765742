"""A long job's units of work on several cores: forked helper processes inside its worker.

    for index, answer in fork_map(fn, units):       # (i, fn(units[i])) for every unit, as they finish
        ...

The head atlas (model/analysis/head_atlas.py) is shards of inputs, then one switch-off unit per input; its `runner`
argument takes this function. `fork_map` forks `processes` helpers from the calling process (the worker of
ui/serving/workers.py, already limited): they share the loaded model copy-on-write, so a unit travels as its index and
only the answer is pickled back. Each helper runs one torch thread and asks for the next unit when it has answered
(the slower helper, on a busy machine, takes fewer); the operating system shares the cores between them and the
room's other work, as between any processes. The helpers inherit the worker's CPU limit (each its own) and its process
group, so the worker's kill (deadline, Cancel, a visitor gone) stops them too; when the caller stops reading or a unit
fails, they are killed here. The worker's memory cap is shared, not multiplied: each of n helpers may grow by 1/n of
the room the worker had left under it at the fork (the cap bounds address space per process).

$VIZ_WORKER_CORES (an operator setting) is how many processes one long job may run at once: by default the cores
this server may use, at most DEFAULT_MOST. 1: the units run one after the other in the worker itself (what the
worker did before). Whatever the number, every unit is computed by the same function with one thread, so the
answers are the same.
"""

from __future__ import annotations

import os
import resource
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from model.env import positive_int
from model.text.fence import kill_child
from ui.serving.workers import address_space

CORES_ENV = "VIZ_WORKER_CORES"
DEFAULT_MOST = 4  # the default's ceiling: a large server's room keeps its other cores


def worker_cores() -> int:
    """$VIZ_WORKER_CORES: processes one long job may run at once (default: this process's cores, at most
    DEFAULT_MOST)."""
    try:
        here = len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        here = os.cpu_count() or 1
    return positive_int(CORES_ENV, max(1, min(here, DEFAULT_MOST)))


def fork_map(fn: Callable[[Any], Any], units: Sequence[Any], processes: int | None = None) -> Iterator[tuple[int, Any]]:
    """(index, fn(units[index])) for every unit, in the order they finish, computed by `processes` forked helpers
    (default worker_cores()); one process or one unit: here, in order. A unit's exception is raised here (the other
    helpers killed); a helper that dies without an answer (the kernel's memory or CPU limit) raises MemoryError."""
    processes = worker_cores() if processes is None else processes
    count = min(processes, len(units))
    if count <= 1:
        for i, unit in enumerate(units):
            yield i, fn(unit)
        return
    import multiprocessing
    from multiprocessing.connection import wait

    ctx = multiprocessing.get_context("fork")
    helpers: dict[Any, int] = {}  # our end of each helper's pipe -> its pid
    share = _memory_share(count)
    try:
        for _ in range(count):
            ours, theirs = ctx.Pipe()
            pid = os.fork()
            if pid == 0:  # the helper
                ours.close()
                for other in helpers:
                    other.close()
                _helper(fn, units, theirs, share)
            theirs.close()
            helpers[ours] = pid
        pending = deque(range(len(units)))
        for conn in helpers:
            conn.send(pending.popleft())
        busy, left = set(helpers), len(units)
        while left:
            for conn in wait(list(busy)):
                try:
                    kind, index, answer = conn.recv()
                except EOFError:
                    raise MemoryError("a helper process of this job stopped without an answer") from None
                if kind == "error":
                    raise answer
                left -= 1
                if pending:
                    conn.send(pending.popleft())
                else:
                    conn.send(None)
                    busy.discard(conn)
                yield index, answer
    finally:
        for conn, pid in helpers.items():
            conn.close()
            kill_child(pid)


def _memory_share(count: int) -> int | None:
    """Bytes of address space each of `count` helpers may add: the room under this process's cap (RLIMIT_AS, the
    worker's) divided among them; None without a cap (a script)."""
    cap = resource.getrlimit(resource.RLIMIT_AS)[0]
    if cap == resource.RLIM_INFINITY:
        return None
    return max(0, cap - address_space()) // count


def _helper(fn: Callable[[Any], Any], units: Sequence[Any], conn, share: int | None = None) -> None:
    """In a forked helper: its share of the memory cap, one torch thread, then units by index until told None. Never
    returns."""
    try:
        if share is not None:
            cap = address_space() + share
            resource.setrlimit(resource.RLIMIT_AS, (cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
        import torch

        torch.set_num_threads(1)
        while (index := conn.recv()) is not None:
            try:
                answer = fn(units[index])
            except BaseException as err:  # noqa: BLE001 - every failure goes back to the caller, which raises it
                try:
                    conn.send(("error", index, err))
                except Exception:  # noqa: BLE001 - an exception that does not pickle
                    conn.send(("error", index, RuntimeError(f"{type(err).__name__}: {str(err)[:200]}")))
                break
            conn.send(("done", index, answer))
    except BaseException:  # noqa: BLE001 - the caller is gone (a broken pipe): nothing left to answer
        pass
    finally:
        os._exit(0)
