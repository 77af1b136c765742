"""A room arriving at a server just started: every page opened by several sessions at once, on a fresh server each
time; how many starts stalled (a session got no end of its first run within --stall-s).

    python -m benchmarks.bench_cold_start [--starts 12] [--each 2] [--stall-s 60] [--burners 0] [--baseline DIR]

A real `streamlit run app.py` on 127.0.0.1, started --starts times; each time every page of the app
(ui/shell/navigation.PAGES) is opened by --each sessions at once on demo:reverse (harness/stream_client.py, Streamlit's
own websocket protocol), each with its own input. The page scripts of a cold server's first sessions run in threads
at once and each imports a different part of the library first: a lock held while importing (Python 3.11's
functools.cached_property, one lock for every registry) deadlocked them, and every later session waiting for those
modules with them. A stalled start's threads are written to cold_start_threads_<n>.txt in the temporary folder
(faulthandler, AppServer.threads). --baseline DIR: the same starts, one after the other with this tree's, on another
checkout (e.g. a worktree of the commit before the fix), side by side in one process; the table gives both.
--burners K: K processes spinning on a core meanwhile (a busy machine, as CI's: the deadlock needs the threads'
imports to interleave, which a loaded machine makes likelier).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import pct, table  # noqa: E402
from harness.browser import ROOT, AppServer  # noqa: E402
from harness.stream_client import StreamSession  # noqa: E402
from ui.shell.navigation import PAGES  # noqa: E402


async def open_all(origin: str, pages: list[str], stall_s: float) -> list[float | None]:
    """Seconds to the end of each session's first run (None: stalled), all sessions at once."""

    async def one(page: str, i: int) -> float | None:
        started = time.perf_counter()
        try:
            async with StreamSession(origin) as session:
                run = await session.open(page, timeout_s=stall_s, model="demo:reverse", text="abcdefgh"[: 2 + i % 6])
            return time.perf_counter() - started if run.status == "FINISHED_SUCCESSFULLY" else None
        except TimeoutError:
            return None

    return await asyncio.gather(*(one(page, i) for i, page in enumerate(pages)))


def starts(root: Path, n: int, each: int, stall_s: float, folder: Path, label: str) -> list[str]:
    pages = [("" if i == 0 else url) for i, url in enumerate(PAGES)] * each  # the first page is served at "/"
    stalled, seconds = 0, []
    for k in range(n):
        server = AppServer(Path(tempfile.mkdtemp(dir=folder)), root=root)
        try:
            times = asyncio.run(open_all(server.origin, pages, stall_s))
            if None in times:
                stalled += 1
                (folder / f"cold_start_threads_{label}_{k}.txt").write_text(server.threads())
            seconds += [t for t in times if t is not None]
        finally:
            server.stop()
        print(f"{label} start {k + 1}/{n}: {'stalled' if None in times else f'{max(times):.1f} s'}", flush=True)
    return [label, str(n), str(len(pages)), str(stalled), *(f"{pct(seconds, q):.1f}" for q in (0.5, 0.95, 1.0))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=12)
    parser.add_argument("--each", type=int, default=2, help="sessions per page at each start")
    parser.add_argument("--stall-s", type=float, default=60.0)
    parser.add_argument("--burners", type=int, default=0, help="processes spinning on a core meanwhile")
    parser.add_argument("--baseline", type=Path, help="another checkout, run the same way first")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="cold_start_"))
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burners)]
    rows = []
    try:
        if args.baseline:
            rows.append(starts(args.baseline.resolve(), args.starts, args.each, args.stall_s, folder, "baseline"))
        rows.append(starts(ROOT, args.starts, args.each, args.stall_s, folder, "this tree"))
    finally:
        for b in burners:
            b.kill()
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), f"threads of stalled starts: {folder}")
    print(table(["tree", "starts", "sessions at once", "stalled starts", "first run p50 (s)", "p95 (s)", "max (s)"],
                rows, title=f"A cold server's first sessions, every page at once, {args.burners} burner(s) beside"))  # fmt: skip


if __name__ == "__main__":
    main()
