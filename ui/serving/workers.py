"""Heavy work in a child process that the operating system limits, stopped when nobody waits for it.

    result = run_limited(model.analysis.attribution.attribute, model, tok, text, method=name)
    result = run_with_progress(fn, *args, key=("attr", ...), label=N_("Computing…"), **kwargs)   # in a page

`run_limited` forks the server process (the child shares the loaded model's memory copy-on-write: nothing is
pickled on the way in), and in the child, before the work starts:

- RLIMIT_AS: the child's address space at the fork plus $VIZ_WORKER_MB (default 1024 MB): an allocation beyond
  fails in the child (torch raises, the child reports "out of memory"), never in the server;
- RLIMIT_CPU: the deadline in CPU seconds plus 5: a child that escapes the wall deadline is killed by the kernel;
- one torch thread (the room's other sessions keep the other cores), its own process group;
- a lower priority ($VIZ_WORKER_NICE, default 10, as the tokenizer's helper): a long run takes what the room's
  sessions leave of the cores, not their share; alone on the machine it runs at full speed.

The parent waits on a pipe: progress messages (the function's `progress(done, total)` argument is sent over it),
then the result or the error, pickled. It kills the child (SIGKILL) when the wall deadline ($VIZ_DEADLINE_S,
default 60 s, an operator setting: model/env.deadline_seconds) passes, when `should_stop()` says so, or when the waiting thread is interrupted (a
Streamlit rerun, a session that left: both raise inside the wait at its next progress update, at most
POLL_S apart) - the `finally` below kills the child within that time.

The result comes back as a copy in the server's memory: it is what the page shows and caches. What the work held
while running (activations, gradients, the graph) stays in the child and goes with it.
"""

from __future__ import annotations

import io
import os
import pickle
import resource
import sys
import time
import traceback
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from i18n import M_, N_
from model.env import deadline_seconds, niceness, positive_int
from model.text.fence import kill_child

ENV_MB = "VIZ_WORKER_MB"
DEFAULT_MB = 1024
NICE_ENV = "VIZ_WORKER_NICE"  # 0: the server's own priority
DEFAULT_NICE = 10
POLL_S = 0.2  # the parent's longest wait between two looks at the child (and at should_stop)

OUT_OF_MEMORY = N_(
    "This computation needed more than the {limit} a worker may use on this server; it was stopped. A shorter "
    "input or smaller settings fit."
)
PAST_DEADLINE = N_(
    "This computation was stopped after {seconds} seconds, this server's limit for one request. A shorter input or "
    "smaller settings fit."
)
CANCELLED = N_("Cancelled. Press “Run again” to start it again, or change the input.")


class WorkerStopped(ValueError):
    """The work did not finish: args[0] is a Message saying why (memory, deadline, cancelled). A ValueError, as
    the pages' other reasons not to show a result, so that they show it as one."""


@dataclass(frozen=True)
class Limits:
    memory: int  # bytes of address space beyond the child's at the fork
    deadline: float  # wall seconds

    @classmethod
    def from_environment(cls) -> Limits:
        return cls(positive_int(ENV_MB, DEFAULT_MB) * 2**20, deadline_seconds())


def address_space() -> int:
    """This process's virtual memory size in bytes (VmSize)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


class _Pickler(pickle.Pickler):
    """Pickles a CPU tensor as its bytes (a numpy array, so out of band) and its dtype and shape: torch's own
    pickling would copy the bytes into the message."""

    def reducer_override(self, obj: Any) -> Any:
        torch = sys.modules.get("torch")
        if torch is None or type(obj) is not torch.Tensor or obj.requires_grad or obj.layout != torch.strided:
            return NotImplemented
        if obj.device.type != "cpu" or obj.is_quantized or obj.is_conj() or obj.is_neg():
            return NotImplemented
        data = obj.detach().contiguous().reshape(-1).view(torch.uint8).numpy()
        return _tensor, (data, obj.dtype, tuple(obj.shape))


def _tensor(data: Any, dtype: Any, shape: tuple[int, ...]) -> Any:
    import torch

    return torch.from_numpy(data).view(dtype).reshape(shape)


def dumps(result: Any) -> tuple[bytes, list[memoryview]]:
    """(head, parts): `result` pickled with the bytes of its arrays and tensors out of band (`parts`, each
    contiguous). The server reads each part straight into the memory its array keeps (a capture of hundreds of MB
    is not held twice or three times on the way) and rebuilds the result with loads."""
    buffers: list[pickle.PickleBuffer] = []
    out = io.BytesIO()
    _Pickler(out, protocol=5, buffer_callback=buffers.append).dump(result)
    return out.getvalue(), [b.raw() for b in buffers]


def loads(head: bytes, parts: list) -> Any:
    """What dumps pickled: arrays and tensors over the memory of `parts` (no copy)."""
    return pickle.loads(head, buffers=parts)


def _write_all(fd: int, data: memoryview) -> None:
    view = data.cast("B")
    while view:
        view = view[os.write(fd, view[: 1 << 24]) :]


def _read_into(fd: int, part: bytearray) -> None:
    """Fill `part` from the pipe, reading straight into it (Connection.recv_bytes_into would read a copy first)."""
    view, got = memoryview(part), 0
    while got < len(part):
        n = os.readv(fd, [view[got:]])
        if n == 0:
            raise EOFError
        got += n


def _child(fn: Callable, args: tuple, kwargs: dict, limits: Limits, conn) -> None:
    """In the forked child: limits first, then the work; every outcome goes back over `conn`. Never returns."""
    code = 0
    try:
        os.setpgid(0, 0)
        os.nice(niceness(NICE_ENV, DEFAULT_NICE))
        try:
            import torch

            torch.set_num_threads(1)
        except ImportError:
            pass
        cap = address_space() + limits.memory
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        cpu = int(limits.deadline) + 5
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))

        def progress(done: int, total: int) -> None:
            conn.send(("progress", int(done), int(total)))

        if "progress" in kwargs:
            kwargs = {**kwargs, "progress": progress}
        result = fn(*args, **kwargs)
        head, parts = dumps(result)
        conn.send(("done", head, [p.nbytes for p in parts]))
        for part in parts:  # raw, after the message that gives their sizes
            _write_all(conn.fileno(), part)
    except MemoryError:
        conn.send(("memory", None))
    except RuntimeError as err:  # torch's allocator: "DefaultCPUAllocator: can't allocate memory"
        kind = "memory" if "allocate" in str(err) or "memory" in str(err) else "error"
        conn.send((kind, err if kind == "error" else None))
    except BaseException as err:  # noqa: BLE001 - every failure goes back to the parent, which decides
        try:
            conn.send(("error", err))
        except Exception:  # noqa: BLE001 - an exception that does not pickle
            conn.send(("error", RuntimeError(traceback.format_exception_only(err)[-1].strip()[:200])))
    finally:
        conn.close()
        os._exit(code)


def run_limited(
    fn: Callable,
    *args: Any,
    limits: Limits | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    **kwargs: Any,
) -> Any:
    """fn(*args, **kwargs) in a limited child process; its result, or its exception raised here.

    A `progress` keyword (any value) is replaced in the child by a function that reports to on_progress here.
    WorkerStopped (a Message) when the child ran out of memory or time; WorkerStopped("cancelled") when
    should_stop() said so. The child is gone when this returns or raises, whatever happened."""
    import multiprocessing

    limits = limits or Limits.from_environment()
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    pid = os.fork()
    if pid == 0:  # the child
        receive.close()
        _child(fn, args, kwargs, limits, send)
    send.close()
    started = time.monotonic()
    try:
        while True:
            left = limits.deadline - (time.monotonic() - started)
            if left <= 0:
                raise WorkerStopped(M_(PAST_DEADLINE, seconds=int(limits.deadline)))
            if should_stop is not None and should_stop():
                raise WorkerStopped(M_(CANCELLED))
            if not receive.poll(min(POLL_S, left)):
                if on_progress is not None:
                    on_progress(-1, -1)  # a heartbeat: the waiting page's chance to notice a rerun or a departure
                continue
            try:
                kind, *payload = receive.recv()
            except EOFError:  # the child died without a word: the kernel's CPU limit, or the OOM killer
                raise WorkerStopped(M_(OUT_OF_MEMORY, limit=_mb(limits.memory))) from None
            if kind == "progress":
                if on_progress is not None:
                    on_progress(*payload)
            elif kind == "done":
                head, sizes = payload
                parts = [bytearray(n) for n in sizes]
                try:
                    for part in parts:
                        _read_into(receive.fileno(), part)
                except EOFError:  # the child died while it sent them
                    raise WorkerStopped(M_(OUT_OF_MEMORY, limit=_mb(limits.memory))) from None
                return loads(head, parts)
            elif kind == "memory":
                raise WorkerStopped(M_(OUT_OF_MEMORY, limit=_mb(limits.memory)))
            else:
                raise payload[0]
    finally:
        receive.close()
        kill_child(pid)


def steady(progress: Callable[[int, int], None]) -> Callable[[int, int], None]:
    """An on_progress for run_limited from a page's progress(done, total): heartbeats repeat the last report (so
    that the page's waiting loop still makes a Streamlit call, where a rerun or a departure interrupts it)."""
    last = [0, 1]

    def report(done: int, total: int) -> None:
        if done >= 0 and total > 0:
            last[:] = [done, total]
        progress(*last)

    return report


def session_gone() -> bool:
    """True when the Streamlit session this script runs for is no longer connected (its visitor left). Streamlit
    also asks the script to stop then, which interrupts the wait at its next heartbeat: this is the second way."""
    try:
        from streamlit.runtime import Runtime
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx(suppress_warning=True)
        if ctx is None or not Runtime.exists():
            return False
        return not Runtime.instance().is_active_session(ctx.session_id)
    except Exception:  # noqa: BLE001 - outside a server (tests, the CLI) nobody leaves
        return False


def heartbeat() -> Callable[[int, int], None]:
    """An on_progress for work shown without a bar (under a spinner): an empty placeholder emptied again at each
    heartbeat, the Streamlit call at which a rerun or a departed session interrupts the wait."""
    import streamlit as st

    slot = st.empty()
    return lambda done, total: slot.empty()


def _mb(n: int) -> str:
    return f"{n / 2**20:.0f} MB"


# -- in a page: a progress bar, a Cancel button --------------------------------------------------------------------

CANCELLED_KEY = "_worker_cancelled"  # session state: the key of the job its visitor cancelled


def _cancel(key) -> None:
    import streamlit as st

    st.session_state[CANCELLED_KEY] = key


def _again() -> None:
    import streamlit as st

    st.session_state.pop(CANCELLED_KEY, None)


def widget_key(name: str, job: tuple) -> str:
    """The key of a job's button: its own per job, so that one page run may start several jobs (the overview's
    summaries, then its thumbnails)."""
    return f"{name}_{zlib.crc32(repr(job).encode()):08x}"


def run_with_progress(fn: Callable, *args: Any, key: tuple, label: str, **kwargs: Any) -> Any:
    """run_limited(fn, *args, **kwargs) under a progress bar (label: a marked string) and a Cancel button.

    Cancel (or any other widget, or leaving the page) reruns the script: the waiting loop is interrupted at its
    next heartbeat and the child killed. A cancelled job (the same key) is not started again until the visitor
    presses "Run again" or changes what the key holds; WorkerStopped says so meanwhile."""
    import streamlit as st

    from i18n import _

    if st.session_state.get(CANCELLED_KEY) == key:
        st.button(_("Run again"), key=widget_key("worker_again", key), on_click=_again)
        raise WorkerStopped(M_(CANCELLED))
    box = st.empty()
    with box.container():
        bar = st.progress(0.0, text=_(label))
        st.button(_("Cancel"), key=widget_key("worker_cancel", key), on_click=_cancel, args=(key,))
    shown = [0.0]
    started = time.monotonic()

    def report(done: int, total: int) -> None:
        if done >= 0 and total > 0:
            shown[0] = min(1.0, done / total)
        seconds = int(time.monotonic() - started)
        bar.progress(shown[0], text=_("{label} ({seconds} s)").format(label=_(label), seconds=seconds))

    try:
        return run_limited(fn, *args, on_progress=report, should_stop=session_gone, **kwargs)
    finally:
        box.empty()
