"""A classroom against one server: N sessions at once, each changing its input every few seconds.

    python -m benchmarks.bench_classroom [--sessions 1 4 8 16 32] [--interval 10] [--changes 4] [--model reverse]

Target (issue 12): on 2 cores with a demo model, 30 sessions each changing the input every 10 s get a
drawn page within 2 s at the 95th percentile. A real `streamlit run app.py` on 127.0.0.1 (loopback
only) serves N sessions spread over the four pages (attention, positional, decoding, model); each
opens its page with its own input, then types a new distinct input every `--interval` seconds
(starts staggered over one interval), `--changes` times, and stops. Sessions speak Streamlit's
websocket protocol (tests/stream_client.py) rather than drive 32 Chromiums, which on 2 cores would
take the CPU the server needs: "time to a drawn page" is from sending the change to receiving the
page's last element, without the browser's own drawing (about 0.1-0.3 s for plotly in Chromium).
Baseline of the ratio column: the first row (N = 1 by default). Load average beside each row (1/5/15 min).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import table  # noqa: E402
from tests.browser_helpers import AppServer  # noqa: E402
from tests.stream_client import StreamSession, distinct_texts, rss_bytes  # noqa: E402

PAGES = ["", "inside", "positional", "decoding", "model"]  # "" is the attention page


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (from /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else float("nan")


async def student(
    origin: str, page: str, texts: list[str], interval: float, offset: float, opens: list, changes: list, failures: list
) -> None:
    async with StreamSession(origin) as session:
        run = await session.open(page, model=MODEL, text=texts[0])
        opens.append(run.seconds)
        start = time.perf_counter() + offset
        for k, text in enumerate(texts[1:]):
            await asyncio.sleep(max(0.0, start + k * interval - time.perf_counter()))
            run = await session.type_text(text)
            if not run.drew(page):
                failures.append((page, text, run.status, run.exceptions))
            changes.append(run.seconds)


async def classroom(origin: str, n: int, interval: float, n_changes: int, texts: list[str]) -> dict:
    rng = random.Random(n)
    opens, changes, failures = [], [], []
    started = time.perf_counter()
    await asyncio.gather(
        *(
            student(
                origin,
                PAGES[i % len(PAGES)],
                texts[i * (n_changes + 1) : (i + 1) * (n_changes + 1)],
                interval,
                rng.uniform(0, interval),
                opens,
                changes,
                failures,
            )
            for i in range(n)
        )
    )
    wall = time.perf_counter() - started
    return {"opens": opens, "changes": changes, "failures": failures, "wall": wall}


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
    args = parser.parse_args()
    MODEL = f"demo:{args.model}"
    texts = distinct_texts(max(args.sessions) * (args.changes + 1) * len(args.sessions), seed=1)
    rows, base, cpu_per_run_all = [], None, []
    with tempfile.TemporaryDirectory() as tmp:
        servers, proxy = [], None
        try:
            for i in range(args.processes):
                (Path(tmp) / f"app{i}").mkdir()
                servers.append(AppServer(Path(tmp) / f"app{i}"))
            origin = servers[0].origin
            if args.processes > 1:
                from tests.proxy_helpers import Proxy

                proxy = Proxy(Path(tmp), [f"127.0.0.1:{s.port}" for s in servers])
                origin = proxy.origin
            pids = [s.process.pid for s in servers]
            for _ in servers:  # warm: every page once in every process (the proxy sends new sessions in turn)
                asyncio.run(classroom(origin, 4, 0.0, 1, distinct_texts(8, seed=2)))
            for j, n in enumerate(args.sessions):
                chunk = texts[j * max(args.sessions) * (args.changes + 1) :]
                cpu = sum(cpu_seconds(pid) for pid in pids)
                r = asyncio.run(classroom(origin, n, args.interval, args.changes, chunk))
                runs = len(r["opens"]) + len(r["changes"])
                cpu_per_run = (sum(cpu_seconds(pid) for pid in pids) - cpu) / runs
                cpu_per_run_all.append(cpu_per_run)
                p50, p95 = pct(r["changes"], 0.5), pct(r["changes"], 0.95)
                base = base or p50
                rows.append(
                    [
                        n,
                        f"{runs / r['wall']:.2f}",
                        f"{p50:.2f}",
                        f"{p95:.2f}",
                        f"{max(r['changes']):.2f}",
                        f"{p50 / base:.1f}x",
                        f"{pct(r['opens'], 0.5):.2f} / {pct(r['opens'], 0.95):.2f}",
                        f"{cpu_per_run:.3f}",
                        len(r["failures"]),
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
        f"\nmodel {MODEL}; {args.processes} app process(es){' behind nginx' if args.processes > 1 else ''}; each "
        f"session changes its input every {args.interval:g} s, {args.changes} times; {os.cpu_count()} CPUs visible"
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
                "max (s)",
                "p50 vs first row",
                "first open p50 / p95 (s)",
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
