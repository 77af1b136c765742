"""Shared helpers for the benchmark scripts: timing and plain-text tables."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence


def timings(fn: Callable[[], object], repeats: int = 3, warmup: int = 1) -> list[float]:
    """Seconds of each of `repeats` calls, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def best_of(fn: Callable[[], object], repeats: int = 3, warmup: int = 1) -> float:
    return min(timings(fn, repeats, warmup))


def median_of(fn: Callable[[], object], repeats: int = 5, warmup: int = 1) -> float:
    return statistics.median(timings(fn, repeats, warmup))


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured markdown table."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join(
        [line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in cells[1:]]
    )
