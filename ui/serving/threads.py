"""The server process's settings: torch and BLAS threads (one per session's run by default, $VIZ_TORCH_THREADS),
the step cap, weights read privately (VIZ_MAP_WEIGHTS), glibc's mapping threshold fixed (VIZ_MALLOC_MMAP_KB: freed
tensors go back to the system), and the long-lived objects kept out of the garbage collector.

Heavy work does not share this process's CPU by hand: it runs in worker processes with OS limits
(ui/serving/workers.py), so the yield points and thread priorities that made heavy runs step aside are gone."""

from __future__ import annotations

import os

from model.analysis.budget import steps_from_environment
from model.checkpoints.safetensors_read import KEEP_MAPPED
from model.decoding import set_step_cap
from ui.serving.long_lived import freeze_long_lived

THREADS_ENV = "VIZ_TORCH_THREADS"  # torch threads per server process; default 1
GC_FREEZE_ENV = "VIZ_GC_FREEZE"  # 0: leave every object to Streamlit's full collection after each run (a baseline)


def set_server_threads() -> int:
    """Give torch one thread (or $VIZ_TORCH_THREADS) for the whole server process, once, at start; numpy's BLAS
    (OpenBLAS, one thread per core by default) gets the same number.

    Every browser session runs the model on its own thread; with torch's default (one OpenMP thread per
    core, per session) concurrent sessions oversubscribe the cores, and measured 10-24x more CPU for
    the same work (benchmarks/bench_threads.py measures it on your machine). One thread per session lets
    sessions share the cores; a single researcher on a big machine may raise it. The inter-op
    pool can only be sized before torch first uses it: later calls leave it as it is. numpy's products (the
    positional page's similarity and shift check) spun a second BLAS thread for matrices this small: twice the
    CPU for the same wall time.
    """
    import torch
    from threadpoolctl import threadpool_limits

    try:
        n = max(1, int(os.environ.get(THREADS_ENV, "1")))
    except ValueError:
        n = 1
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(n)
    except RuntimeError:  # already started (or set) in this process
        pass
    threadpool_limits(limits=n, user_api="blas")  # for the whole process, not only a block
    return n


MALLOC_ENV = "VIZ_MALLOC_MMAP_KB"  # the allocation size (KB) from which glibc maps memory of its own; 0: glibc's own
M_MMAP_THRESHOLD = -3  # mallopt's parameter (malloc.h)


def fix_malloc_threshold() -> int:
    """Make glibc map every allocation of $VIZ_MALLOC_MMAP_KB (default 128 KB) or more on its own, and give it back
    to the system when freed; returns the threshold in bytes (0: left as it was, or not glibc).

    By default glibc raises that threshold each time a mapped block is freed (up to 32 MB), after which tensors of a
    few MB come from the heap, and a heap fragmented by blocks of growing sizes never shrinks: a beam search of 4
    over 256 steps (key/value caches and encoder memory reordered each step) left the server +1,079 MB, +49 MB with
    the threshold fixed (benchmarks/bench_hostile.py --stranger). Setting the threshold turns its rise off."""
    try:
        kb = int(os.environ.get(MALLOC_ENV, "128"))
    except ValueError:
        kb = 128
    if kb <= 0:
        return 0
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        ok = libc.mallopt(M_MMAP_THRESHOLD, kb * 1024)
    except (OSError, AttributeError):  # not glibc
        return 0
    return kb * 1024 if ok == 1 else 0


def _under_apptest() -> bool:
    from streamlit import config

    return bool(config.get_option("global.appTest"))


_started = False  # start_server_once() ran in this process (never under AppTest: tests keep torch's default)


def start_server_once() -> None:
    """At the server's first page run: its threads, every decoding's step cap ($VIZ_MAX_STEPS), and weights read
    into the server's own memory unless the operator chose otherwise (VIZ_MAP_WEIGHTS, set before workers start so
    that they inherit it): a mapped file that a training run truncates in an allowed folder would crash the server
    with every visitor's session (SIGBUS); the library's default maps, as transformers does."""
    global _started
    if not _started and not _under_apptest():
        os.environ.setdefault(KEEP_MAPPED, "0")
        fix_malloc_threshold()
        set_server_threads()
        set_step_cap(steps_from_environment())
        _started = True


def end_of_run() -> None:
    """At the end of every page run of the server (never under AppTest): freeze what has come to live as long as
    the process since the last time (ui/serving/long_lived.py)."""
    if _started and os.environ.get(GC_FREEZE_ENV, "1") != "0":
        freeze_long_lived()
