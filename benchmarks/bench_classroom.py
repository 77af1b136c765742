"""A classroom against one server: N sessions at once, each changing its input every few seconds.

    python -m benchmarks.bench_classroom [--sessions 1 4 8 16 32] [--interval 10] [--changes 4] [--model reverse]
                                         [--repeats 3] [--processes 2]

Target (issue 12): on 2 cores with a demo model, 30 sessions each changing the input every 10 s get a
drawn page within 2 s at the 95th percentile. A real `streamlit run app.py` on 127.0.0.1 (loopback
only) serves N sessions spread over the four pages (attention, positional, decoding, model); each
opens its page with its own input, then types a new distinct input every `--interval` seconds
(starts staggered over one interval), `--changes` times, and stops. Open loop: the opens and changes happen on a
fixed schedule whatever the server does, and each is timed from its scheduled moment (a change that waits behind
the session's previous one counts the wait: no coordinated omission); first page opens are counted too. Each row
runs `--repeats` times (3): the median and the range of the runs are printed. Sessions speak Streamlit's
websocket protocol (harness/stream_client.py) rather than drive 32 Chromiums, which on 2 cores would
take the CPU the server needs: "time to a drawn page" is from sending the change to receiving the
page's last element, without the browser's own drawing (about 0.1-0.3 s for plotly in Chromium).
Load average beside each row (1/5/15 min).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import pct, table  # noqa: E402
from harness.browser import AppServer  # noqa: E402
from harness.stream_client import StreamSession, distinct_texts, rss_bytes  # noqa: E402

PAGES = ["", "inside", "positional", "decoding", "model"]  # "" is the attention page


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (from /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def student(
    origin: str, page: str, texts: list[str], schedule: list[float], opens: list, changes: list, failures: list
) -> None:
    """One session on a fixed schedule (open loop): it opens its page at schedule[0] and changes its input at
    schedule[1:] (time.perf_counter() moments), whatever the server does. Each is timed from its scheduled moment
    to its page's last element: a change that waits for the previous one to finish counts that wait too."""
    await asyncio.sleep(max(0.0, schedule[0] - time.perf_counter()))
    async with StreamSession(origin) as session:
        run = await session.open(page, model=MODEL, text=texts[0])
        opens.append(time.perf_counter() - schedule[0])
        for text, due in zip(texts[1:], schedule[1:]):
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            run = await session.type_text(text)
            if not run.drew(page):
                failures.append((page, text, run.status, run.exceptions))
            changes.append(time.perf_counter() - due)


async def classroom(origin: str, n: int, interval: float, n_changes: int, texts: list[str], seed: int = 0) -> dict:
    """n sessions: page opens spread uniformly over one interval, then a change every interval after each open."""
    rng = random.Random(seed * 1000 + n)
    opens, changes, failures = [], [], []
    started = time.perf_counter() + 0.05
    schedules = []
    for _ in range(n):
        first = started + rng.uniform(0, interval)
        schedules.append([first + k * interval for k in range(n_changes + 1)])
    await asyncio.gather(
        *(
            student(
                origin,
                PAGES[i % len(PAGES)],
                texts[i * (n_changes + 1) : (i + 1) * (n_changes + 1)],
                schedules[i],
                opens,
                changes,
                failures,
            )
            for i in range(n)
        )
    )
    wall = time.perf_counter() - started
    return {"opens": opens, "changes": changes, "failures": failures, "wall": wall}


def spread(values: list[float]) -> str:
    """The median of a row's runs, and their range: "1.23 (1.10-1.40)"."""
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


MODEL = "demo:reverse"


def main() -> None:
    global MODEL
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 4, 8, 16, 32])
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--changes", type=int, default=4)
    parser.add_argument("--model", default="reverse")
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="app processes; more than 1 puts nginx in front (deploy/nginx_conf.py, as docs/serving.md)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs of each row (median and range printed)")
    args = parser.parse_args()
    MODEL = f"demo:{args.model}"
    per_run = max(args.sessions) * (args.changes + 1)
    texts = distinct_texts(per_run * len(args.sessions) * args.repeats, seed=1)
    rows, cpu_per_run_all, used = [], [], 0
    with tempfile.TemporaryDirectory() as tmp:
        servers, proxy = [], None
        try:
            for i in range(args.processes):
                (Path(tmp) / f"app{i}").mkdir()
                servers.append(AppServer(Path(tmp) / f"app{i}"))
            origin = servers[0].origin
            if args.processes > 1:
                from harness.proxy import Proxy

                proxy = Proxy(Path(tmp), [f"127.0.0.1:{s.port}" for s in servers])
                origin = proxy.origin
            pids = [s.process.pid for s in servers]
            for _ in servers:  # warm: every page once in every process (the proxy sends new sessions in turn)
                asyncio.run(classroom(origin, 4, 0.0, 1, distinct_texts(8, seed=2)))
            for n in args.sessions:
                runs_of_row = []
                for rep in range(args.repeats):
                    chunk = texts[used : used + per_run]
                    used += per_run
                    cpu = sum(cpu_seconds(pid) for pid in pids)
                    r = asyncio.run(classroom(origin, n, args.interval, args.changes, chunk, seed=rep))
                    r["cpu"] = (sum(cpu_seconds(pid) for pid in pids) - cpu) / (len(r["opens"]) + len(r["changes"]))
                    runs_of_row.append(r)
                    print(f"N={n} run {rep + 1}: change p95 {pct(r['changes'], 0.95):.2f} s", flush=True)
                cpu_per_run_all += [r["cpu"] for r in runs_of_row]
                every = [r["opens"] + r["changes"] for r in runs_of_row]
                rows.append(
                    [
                        n,
                        spread([(len(r["opens"]) + len(r["changes"])) / r["wall"] for r in runs_of_row]),
                        spread([pct(r["changes"], 0.5) for r in runs_of_row]),
                        spread([pct(r["changes"], 0.95) for r in runs_of_row]),
                        spread([pct(r["opens"], 0.95) for r in runs_of_row]),
                        spread([pct(e, 0.95) for e in every]),
                        f"{max(max(e) for e in every):.2f}",
                        spread([r["cpu"] for r in runs_of_row]),
                        sum(len(r["failures"]) for r in runs_of_row),
                        " + ".join(f"{rss_bytes(pid) / 2**20:.0f}" for pid in pids),
                        " ".join(f"{x:.1f}" for x in os.getloadavg()),
                    ]
                )
                print(f"N={n} done: {rows[-1]}", flush=True)
        finally:
            if proxy is not None:
                proxy.stop()
            for server in servers:
                server.stop()
    print(
        f"\nmodel {MODEL}; {args.processes} app process(es){' behind nginx' if args.processes > 1 else ''}; open "
        f"loop: each session opens its page at a random moment of the first {args.interval:g} s, then changes its "
        f"input every {args.interval:g} s, {args.changes} times, each timed from its scheduled moment; "
        f"{args.repeats} runs per row: median (min-max); {os.cpu_count()} CPUs visible; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    worst = max(cpu_per_run_all)
    print(
        f"server CPU per page run: up to {worst:.3f} s; at that cost 2 cores kept half busy serve "
        f"{capacity(worst, interval=args.interval)} students changing their input every {args.interval:g} s"
    )
    print(
        table(
            [
                "sessions",
                "pages/s",
                "change p50 (s)",
                "change p95 (s)",
                "first open p95 (s)",
                "all p95 (s)",
                "max (s)",
                "server CPU s per page",
                "failed",
                "server RSS (MB)",
                "load average",
            ],
            rows,
        )
    )


def capacity(cpu_per_run: float, cores: float = 2.0, interval: float = 10.0, busy: float = 0.5) -> int:
    """Students one machine serves: changes every `interval` s, the server's CPU kept `busy` (0.5: half) of `cores`."""
    return int(cores * busy * interval / cpu_per_run)


if __name__ == "__main__":
    main()
