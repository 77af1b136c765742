"""Shared helpers for the benchmark scripts: timing, plain-text tables, and the results file.

Every table a benchmark prints with `table()` is also kept, and when the benchmark ends its tables are written
to `benchmarks/results/<script>.json` with the date (UTC), the load average at start and end, the number of
CPUs and the command line. `scripts/docs_tables.py` renders those files into the documentation site's
benchmark page (docs/benchmark-results.md), so a published figure always carries its date and load.
`BENCH_RESULTS_DIR` writes elsewhere; `BENCH_RESULTS_DIR=` (empty) writes nothing.
"""

from __future__ import annotations

import atexit
import datetime as _dt
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"
_TABLES: list[dict] = []


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # not on every platform
        return None


_STARTED = {"date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), "load_start": _loadavg()}


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


def pct(values: Sequence[float], q: float) -> float:
    """The q-quantile of values (the nearest rank; nan when there are none)."""
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else float("nan")


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], title: str | None = None) -> str:
    """A GitHub-flavoured markdown table; also kept for the results file (see the module docstring)."""
    _TABLES.append({"title": title, "headers": [str(h) for h in headers], "rows": [[str(c) for c in r] for r in rows]})
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join(
        [line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in cells[1:]]
    )


def target_row(what: str, value: float, limit: float, unit: str, digits: int = 0) -> list[str]:
    """A summary row for a measure held to an upper limit: [what, value, "<= limit", "yes" or "NO"]."""
    return [what, f"{value:.{digits}f} {unit}", f"<= {limit:g} {unit}", "yes" if value <= limit else "NO"]


def script_name(argv0: str) -> str | None:
    """The benchmark's name (`bench_core`) when `argv0` is a benchmark script, else None."""
    name = Path(argv0).stem
    return name if name.startswith("bench_") else None


def results_record(script: str, argv: Sequence[str], tables: Sequence[dict]) -> dict:
    """What one run writes: the command, when, at what load on how many CPUs, and its tables."""
    return {
        "script": script,
        "command": " ".join(["python -m benchmarks." + script, *argv]),
        "date": _STARTED["date"],
        "load_start": _STARTED["load_start"],
        "load_end": _loadavg(),
        "cpus": os.cpu_count(),
        "tables": list(tables),
    }


RESULTS_SUFFIX = [""]  # a script with several modes names each mode's file: bench_hostile --stranger -> _stranger


def write_results(directory: Path | None = None) -> Path | None:
    """Write this run's tables to `<directory>/<script><suffix>.json` (the latest run of each script and mode is
    kept)."""
    script = script_name(sys.argv[0]) if sys.argv else None
    env = os.environ.get("BENCH_RESULTS_DIR")
    if directory is None:
        if env == "":
            return None
        directory = Path(env) if env else RESULTS_DIR
    if not script or not _TABLES:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{script}{RESULTS_SUFFIX[0]}.json"
    path.write_text(json.dumps(results_record(script, sys.argv[1:], _TABLES), indent=1, ensure_ascii=False) + "\n")
    return path


atexit.register(write_results)
