"""Operator settings read from the environment: limits, each a positive whole number, its default where it is unset
or not one (a typo never switches a limit off); switches, on unless set to 0."""

from __future__ import annotations

import os


def positive_int(name: str, default: int) -> int:
    """int($name) when it is a positive whole number, else `default`."""
    try:
        value = int(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


def positive_float(name: str, default: float) -> float:
    """float($name) when it is a positive finite number, else `default`."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if 0 < value < float("inf") else default


def niceness(name: str, default: int) -> int:
    """int($name) when it is a niceness a process may give itself (0-19), else `default`."""
    try:
        value = int(os.environ.get(name, default))
    except ValueError:
        return default
    return value if 0 <= value <= 19 else default


def switch(name: str, default: bool = True) -> bool:
    """$name as a switch: "0" turns it off, "1" on; unset or anything else leaves `default`."""
    value = os.environ.get(name, "").strip()
    return {"0": False, "1": True}.get(value, default)


# A worker's wall time (ui/serving/workers.py): the deadline of one heavy request. The default fits a classroom's server;
# an operator who lets visitors read long inputs of larger models (a forward pass of minutes on a CPU) raises it
# together with the work budgets (VIZ_WORK_MB, VIZ_WORK_GOPS), which decide what a visitor may ask for.
DEADLINE_ENV = "VIZ_DEADLINE_S"
DEFAULT_DEADLINE_S = 60.0


def deadline_seconds() -> float:
    """$VIZ_DEADLINE_S: the wall seconds a worker may run (default 60; any positive number the operator sets)."""
    return positive_float(DEADLINE_ENV, DEFAULT_DEADLINE_S)


# The memory a model's weights may take (model/network/config.py LIMITS["parameters"]).
WEIGHTS_ENV = "VIZ_WEIGHTS_MB"  # the memory a model's weights may take; unset: half of this machine's memory
F32_BYTES = 4  # the weights are kept in float32 (a bf16 checkpoint's numbers are widened when read) ...
BF16_BYTES = 2  # ... unless the operator keeps a bfloat16 checkpoint as stored ($VIZ_KEEP_BF16=1)
KEEP_BF16_ENV = "VIZ_KEEP_BF16"


def keep_bf16() -> bool:
    """$VIZ_KEEP_BF16=1: a Hugging Face folder whose every floating tensor is stored in bfloat16 is kept so (half
    the memory of float32: Qwen2.5-1.5B in 3.1 GB, not 6.2), its forward runs in bfloat16 and every map, summary and
    distribution is computed from it in float32. Off by default: weights are widened to float32, so that a map is
    the float32 forward's."""
    return switch(KEEP_BF16_ENV, False)


def narrowest_bytes() -> int:
    """Bytes of the narrowest float type weights may be kept in on this server (model/network/config.py counts the
    numbers any model may hold with it; a loader then counts its own kept type, model/checkpoints/formats/
    hf_common.py)."""
    return BF16_BYTES if keep_bf16() else F32_BYTES


def machine_memory() -> int:
    """Bytes of memory this process may use: the machine's physical memory, or its control group's limit when lower
    (a container)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def parameter_limit(bytes_per_number: int = F32_BYTES) -> int:
    """The most numbers a model may hold: the memory its weights may take ($VIZ_WEIGHTS_MB, default half of this
    machine's memory: the other half is the work budgets' and the server's) over the bytes of the float type they are
    kept in. Llama-3.2-1B (1,236 million numbers) and Qwen2.5-1.5B (1,544 million) in float32 need 5 and 6.2 GB:
    they open on a machine of 16 GB."""
    room = positive_int(WEIGHTS_ENV, 0) * 2**20 or machine_memory() // 2
    return max(1, room // bytes_per_number)
