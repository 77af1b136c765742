"""Hostile visitors beside a working room (issue 22): does the server hold?

    python -m benchmarks.bench_hostile [--sessions 10] [--interval 4] [--changes 8] [--work-mb 256]

A real `streamlit run app.py` on 127.0.0.1 (loopback only). Phase 1: N ordinary sessions on the reverse demo,
spread over the pages, each typing a new input every `--interval` seconds (Streamlit's websocket protocol,
harness/stream_client.py), while a newcomer opens five ordinary links, each in a new session (the baseline: a new
session costs the server the same whatever its link). Phase 2: the same sessions, while one hostile visitor sends, one after the other, what the
issue's adversarial run found: a checkpoint of 32 heads and max_len 16384 (a few hundred KB) with a
16,000-character input; the reverse demo with </s> suppressed and max_len 16384 decoding 4,000 characters; a
link carrying 5 MB of text; a beam of 8 on a long input; and, through headless Chromium, uploads: a zip whose
weights expand 130x, a safetensors file of a million one-element tensors (zipped), files named `..` and 300
characters long. The extra visitor (newcomer or hostile) runs in a process of its own at the lowest priority,
as its browser runs on its own machine. Printed: the ordinary sessions' change p50/p95 in each phase and the p95 growth (target
<= 1.5x), the server's RSS at the start and its peak (sampled every 0.1 s),
tracebacks anywhere (pages and server log), and the bytes under the server's upload folder before and after.
The memory criterion: the hostile phase's peak stays within the ordinary phase's peak plus one session's work
budget (the hostile visitor runs one page at a time).

    python -m benchmarks.bench_hostile --issue30 [--sessions 5] [--changes 5]

Issue 30's attacks instead, each alone beside the room after an ordinary phase: a T5 folder whose spiece.model
rewrites `a` as 2,000 `z`s with 20,000 characters of `a b`, the integrated-gradients link with the largest
settings (31 letters, attr_steps=128), a wide checkpoint (d_ff 8192) on the Attribution page, a BART folder with a
57 MB vocab.json, and a visitor who opens the Attribution page of the reverse demo on 31 letters (the default
methods and attention flow: the defaults alone finish in about a second) and leaves once its worker runs. One
row each: the ordinary sessions' p95 before and during (ratio), the server's RSS before the attack, its peak and after,
the workers' peak RSS (every child of the server), the attack's own seconds, the seconds from leaving until no
worker was left, tracebacks, the upload folder's bytes.

    python -m benchmarks.bench_hostile --stranger [--sessions 5] [--changes 5]

A stranger's checkpoints instead (benchmarks/hostile_files.py), each alone beside the room, in the same table as
--issue30: configs of 60 and 20 MB, a 50 MB tokenizer.json, a pre-tokenizer that panics, a normalizer rule on U+A66E,
the never-ending decoder on the longest input (greedy, and a beam of 4), a Llama config with a linear RoPE scaling.

    python -m benchmarks.bench_hostile --checked [--sessions 5] [--changes 5] [--soak 500]

A stranger's checkpoint read in a limited worker, its tokenizer behind a fence (benchmarks/hostile_checked.py):
the room's p95 beside a tokenizer that backtracks on the visitor's text, the seconds until a loading worker stops
after its visitor leaves (a GPT-2 of the real small shape), and the server's RSS after 50 and after --soak inputs.

    python -m benchmarks.bench_hostile --gc-freeze [--sessions 5] [--changes 5]

What the one piece of in-process tuning left after issue 30 still buys (the forward hook and thread priorities are
gone): the same ordinary room against a server with `gc.freeze` after each run (ui/serving/long_lived.py) and one without
(`VIZ_GC_FREEZE=0`), side by side: p95, and the server's CPU seconds per input change, with their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_classroom import pct  # noqa: E402
from benchmarks.common import table  # noqa: E402
from benchmarks.hostile_inputs import (  # noqa: E402
    BENIGN,
    LETTERS31,
    hostile_links,
    hostile_models,
    hostile_uploads,
    issue30_links,
    issue30_models,
)
from harness.browser import AppServer, Watch, chromium, upload_field, wait_text  # noqa: E402
from harness.stream_client import BackMsg, StreamSession, distinct_texts, rss_bytes  # noqa: E402

PAGES = ["", "inside", "positional", "decoding", "model"]


def worker_rss(pid: int) -> int:
    """Resident memory of every child process of `pid` (any of its threads may have forked a worker)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            try:
                total += rss_bytes(int(child))
            except (OSError, RuntimeError):
                pass
    return total


async def leave_mid_run(server: AppServer, page: str, params: dict) -> tuple[float, float]:
    """A visitor opens a heavy view and leaves once its worker runs: (seconds the worker was seen running before the
    visitor left, seconds from leaving until no worker of the server was left)."""
    pid = server.process.pid
    async with StreamSession(server.origin) as s:
        s.page, s.query = page, urllib.parse.urlencode(params)
        msg = BackMsg()
        msg.rerun_script.query_string, msg.rerun_script.page_name = s.query, s.page
        await s.ws.send(msg.SerializeToString())
        started = time.perf_counter()

        async def drain() -> None:  # a browser reads what the server sends; unread, it would hold up the close
            with contextlib.suppress(Exception):
                while True:
                    await s.ws.recv()

        reader = asyncio.create_task(drain())
        while worker_rss(pid) == 0 and time.perf_counter() - started < 60:
            await asyncio.sleep(0.05)
        seen = time.perf_counter() - started
        await asyncio.sleep(1.0)
        running = worker_rss(pid)  # still working when the visitor leaves
        if not running:
            return seen, float("nan")
        left = time.perf_counter()  # the visitor closes the connection now
        await s.ws.close()
        reader.cancel()
    while worker_rss(pid) > 0 and time.perf_counter() - left < 120:
        await asyncio.sleep(0.02)
    return seen, time.perf_counter() - left


def upload_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("transformer-viz-uploads-*/**/*") if p.is_file())


async def ordinary(origin: str, page: str, texts: list[str], interval: float, offset: float, out: dict) -> None:
    async with StreamSession(origin) as s:
        run = await s.open(page, model="demo:reverse", text=texts[0])
        out["exceptions"] += run.exceptions
        start = time.perf_counter() + offset
        for k, text in enumerate(texts[1:]):
            await asyncio.sleep(max(0.0, start + k * interval - time.perf_counter()))
            run = await s.type_text(text)
            out["changes"].append(run.seconds)
            out["exceptions"] += run.exceptions


async def open_links(origin: str, links: list, out) -> None:
    """Links opened one after the other, each in a fresh session (as a visitor opening them); results to a queue."""
    for page, params in links:
        async with StreamSession(origin) as s:
            run = await s.open(page, **params)
            out.put(("link", (page or "attention", run.seconds, run.status)))
            for exception in run.exceptions:
                out.put(("exception", exception))


def visit(origin: str, links: list, out) -> None:
    """The extra visitor (a newcomer or the hostile one) in a process of its own at the lowest priority: the visitor's
    client runs on the visitor's machine. In the measured sessions' event loop, reading the answers to its links (tens
    of MB of figures for a 32-head map) stopped every measured session while it parsed them."""
    os.nice(19)
    asyncio.run(open_links(origin, links, out))


def upload_all(server: AppServer, uploads: list[tuple[str, bytes]], out) -> None:
    """In a process of its own at the lowest priority: the hostile visitor's browser runs on the visitor's machine,
    not on the server's cores (its Chromium would otherwise take CPU from the sessions measured)."""
    os.nice(19)
    with chromium() as browser:
        watch = Watch(browser, server.origin)
        try:
            watch.goto(server.url(model="demo:reverse", text="abc"))
            files = upload_field(watch)
            for name, data in uploads:
                started = time.perf_counter()
                files.set_input_files({"name": name, "mimeType": "application/octet-stream", "buffer": data})
                error = wait_text(watch, "Could not load this model").inner_text()
                leak = "/tmp" in error or "uploads-" in error
                out.put(("upload", (name[:20], time.perf_counter() - started, leak)))
            for traceback in watch.tracebacks():
                out.put(("exception", traceback))
        finally:
            watch.close()


def warm(server: AppServer, texts) -> int:
    """The server's first visit and one ordinary session (its caches warm), then its resident memory in bytes."""
    with chromium() as browser:
        server.first_visit(browser)
    asyncio.run(ordinary(server.origin, "", texts[0][:2], 0, 0, {"changes": [], "exceptions": []}))
    return rss_bytes(server.process.pid)


def phase(server: AppServer, args, texts, hostile: bool, models=None, uploads=None, links=None) -> dict:
    out = {"changes": [], "exceptions": [], "hostile": [], "uploads": [], "peak": 0, "worker_peak": 0}
    pid, stop = server.process.pid, threading.Event()

    def sample() -> None:
        while not stop.is_set():
            out["peak"] = max(out["peak"], rss_bytes(pid))
            out["worker_peak"] = max(out["worker_peak"], worker_rss(pid))
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    uploader, results = None, multiprocessing.Queue()
    if hostile and args.hostile != "links" and uploads is not None:
        uploader = multiprocessing.Process(target=upload_all, args=(server, uploads, results), daemon=True)
        uploader.start()

    async def room() -> None:
        tasks = [
            ordinary(
                server.origin, PAGES[i % len(PAGES)], texts[i], args.interval, args.interval * i / args.sessions, out
            )
            for i in range(args.sessions)
        ]
        await asyncio.gather(*tasks)

    if links is None:
        links = hostile_links(models) if hostile and args.hostile != "uploads" else [] if hostile else BENIGN
    visitor = multiprocessing.Process(target=visit, args=(server.origin, links, results), daemon=True)
    visitor.start()
    asyncio.run(room())
    for process in (visitor, uploader):
        if process is not None:
            process.join()
    while not results.empty():
        what, value = results.get()
        out[{"upload": "uploads", "link": "hostile"}.get(what, "exceptions")].append(value)
    stop.set()
    sampler.join()
    out["load"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--interval", type=float, default=4.0)
    parser.add_argument("--changes", type=int, default=8)
    parser.add_argument("--work-mb", type=int, default=256)
    parser.add_argument(
        "--hostile", choices=["all", "links", "uploads"], default="all", help="what the hostile visitor sends"
    )
    parser.add_argument("--issue30", action="store_true", help="issue 30's attacks, each alone beside the room")
    parser.add_argument("--stranger", action="store_true", help="a stranger's checkpoints, each alone beside the room")
    parser.add_argument("--leave-only", action="store_true", help="with --issue30: only the visitor who leaves")
    parser.add_argument("--gc-freeze", action="store_true", help="the room with and without gc.freeze, side by side")
    parser.add_argument("--checked", action="store_true", help="a stranger's checkpoint checked in a worker, fenced")
    parser.add_argument("--soak", type=int, default=500, help="with --checked: inputs for the memory row")
    parser.add_argument("--only", help="with --issue30 or --stranger: only the attacks whose name contains this")
    args = parser.parse_args()
    from benchmarks.common import RESULTS_SUFFIX

    mode = next((m for m in ("checked", "issue30", "stranger", "gc_freeze") if getattr(args, m)), None)
    RESULTS_SUFFIX[0] = (f"_{mode}" if mode else "") + ("_some" if args.only else "")  # a part: not the full table
    if args.checked:
        from benchmarks.hostile_checked import main_checked

        return main_checked(args, phase)
    if args.issue30:
        return main_issue30(args)
    if args.stranger:
        from benchmarks.hostile_files import stranger_links, stranger_models

        return main_issue30(args, stranger_models, stranger_links, leave=False)
    if args.gc_freeze:
        return main_gc_freeze(args)
    from model.checkpoints.serving import ENV

    all_texts = distinct_texts(2 * args.sessions * (args.changes + 1), seed=3)
    texts = [all_texts[i * (args.changes + 1) : (i + 1) * (args.changes + 1)] for i in range(2 * args.sessions)]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "models").mkdir()
        (tmp / "app").mkdir()
        models = hostile_models(tmp / "models")
        uploads = hostile_uploads(tmp)
        os.environ[ENV] = str(tmp / "models")
        os.environ["VIZ_WORK_MB"] = str(args.work_mb)
        server = AppServer(tmp / "app")
        try:
            start_rss = warm(server, texts)
            disk_before = upload_bytes(tmp / "app")
            quiet = phase(server, args, texts[: args.sessions], hostile=False)
            loud = phase(server, args, texts[args.sessions :], hostile=True, models=models, uploads=uploads)
            disk_after = upload_bytes(tmp / "app")
            log_tracebacks = server.log().count("Traceback")
        finally:
            server.stop()
    # what the hostile visitor may add: one session's work budget above what the ordinary room itself reached
    budget = quiet["peak"] + args.work_mb * 2**20
    rows = []
    hostile = {"all": "the hostile visitor", "links": "the hostile visitor's links", "uploads": "the hostile uploads"}
    for name, r in (("ordinary + a newcomer's 5 links", quiet), (f"ordinary + {hostile[args.hostile]}", loud)):
        rows.append(
            [
                name,
                f"{pct(r['changes'], 0.5):.2f}",
                f"{pct(r['changes'], 0.95):.2f}",
                f"{pct(r['changes'], 0.95) / pct(quiet['changes'], 0.95):.2f}x",
                f"{start_rss / 2**20:.0f} / {r['peak'] / 2**20:.0f}",
                "yes" if r["peak"] <= budget else "NO",
                len(r["exceptions"]),
                r["load"],
            ]
        )
    print(
        f"\n{args.sessions} ordinary sessions (reverse demo), a new input every {args.interval:g} s, {args.changes} "
        f"changes each; work budget {args.work_mb} MB; {time.strftime('%Y-%m-%d')}"
    )
    print(
        table(
            ["phase", "change p50 (s)", "change p95 (s)", "p95 vs the newcomer's phase", "server RSS start / peak (MB)",
             "peak <= ordinary peak + work budget", "tracebacks on pages", "load average at its end"],
            rows,
        )
    )  # fmt: skip
    print(
        table(
            ["hostile input", "seconds", "ended"],
            [[page, f"{seconds:.2f}", status] for page, seconds, status in loud["hostile"]],
        )
    )
    print(
        table(
            ["hostile upload", "seconds to the refusal", "private path shown"],
            [[name, f"{seconds:.2f}", "YES" if leak else "no"] for name, seconds, leak in loud["uploads"]],
        )
    )
    print(
        f"upload folder: {disk_before} bytes before, {disk_after} after the hostile uploads; "
        f"tracebacks in the server log: {log_tracebacks}"
    )


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main_gc_freeze(args) -> None:
    """The ordinary room against a server that freezes its long-lived objects after each run and one that does not."""
    all_texts = distinct_texts(2 * args.sessions * (args.changes + 1), seed=5)
    per = args.changes + 1
    texts = [all_texts[i * per : (i + 1) * per] for i in range(2 * args.sessions)]
    rows, measured = [], {}
    for k, (name, freeze) in enumerate((("gc.freeze after each run (default)", "1"), ("VIZ_GC_FREEZE=0", "0"))):
        os.environ["VIZ_GC_FREEZE"] = freeze
        with tempfile.TemporaryDirectory() as tmp:
            server = AppServer(Path(tmp))
            try:
                with chromium() as browser:
                    server.first_visit(browser)
                asyncio.run(ordinary(server.origin, "", texts[0][:2], 0, 0, {"changes": [], "exceptions": []}))
                before = cpu_seconds(server.process.pid)
                r = phase(server, args, texts[k * args.sessions : (k + 1) * args.sessions], hostile=False)
                cpu = (cpu_seconds(server.process.pid) - before) / max(1, len(r["changes"]))
            finally:
                server.stop()
        measured[freeze] = (pct(r["changes"], 0.95), cpu)
        rows.append([name, f"{measured[freeze][0]:.2f}", f"{cpu:.3f}", len(r["changes"]), r["load"]])
    os.environ.pop("VIZ_GC_FREEZE", None)
    for row, freeze in zip(rows, ("1", "0")):
        row[1:3] = [f"{row[1]} ({measured[freeze][0] / measured['0'][0]:.2f}x)",
                    f"{row[2]} ({measured[freeze][1] / measured['0'][1]:.2f}x)"]  # fmt: skip
    print(f"\n{args.sessions} ordinary sessions, a new input every {args.interval:g} s, {args.changes} changes each; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; uptime: {os.popen('uptime').read().strip()}")  # fmt: skip
    print(table(["server", "p95 (s), ratio to no freeze", "server CPU s per change, ratio", "changes", "load after"],
                rows, title="gc.freeze"))  # fmt: skip


def main_issue30(args, build=issue30_models, links_of=issue30_links, leave: bool = True) -> None:
    """Issue 30's attacks (or those `build` and `links_of` give), one at a time beside the room, then the visitor who
    leaves mid-run (unless not `leave`); one row each."""

    attacks_n = 9
    all_texts = distinct_texts((attacks_n + 1) * args.sessions * (args.changes + 1), seed=3)
    per = args.changes + 1
    texts = [all_texts[i * per : (i + 1) * per] for i in range((attacks_n + 1) * args.sessions)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.environ["VIZ_WORK_MB"] = str(args.work_mb)
        from benchmarks.hostile_checked import room_server

        models, server = room_server(tmp, build)
        try:
            start_rss = warm(server, texts)
            quiet = phase(server, args, texts[: args.sessions], hostile=False) if not args.leave_only else None
            base_p95 = pct(quiet["changes"], 0.95) if quiet else 0.0
            attacks = {k: v for k, v in (links_of(models) if quiet else {}).items() if (args.only or "") in k}
            for k, (name, links) in enumerate(attacks.items(), start=1):
                disk, before = upload_bytes(tmp / "app"), rss_bytes(server.process.pid)
                r = phase(server, args, texts[k * args.sessions : (k + 1) * args.sessions], True, links=links)
                after = rss_bytes(server.process.pid)
                seconds = " ".join(f"{sec:.1f}" for _, sec, _ in r["hostile"])
                rows.append([name, f"{base_p95:.2f}", f"{pct(r['changes'], 0.95):.2f}",
                             f"{pct(r['changes'], 0.95) / base_p95:.2f}x", f"{before / 2**20:.0f} / {r['peak'] / 2**20:.0f} / {after / 2**20:.0f}",
                             f"{r['worker_peak'] / 2**20:.0f}", seconds, "-", len(r["exceptions"]),
                             f"{disk} / {upload_bytes(tmp / 'app')}"])  # fmt: skip
            if leave:
                before = rss_bytes(server.process.pid)
                seen, stopped = asyncio.run(
                    # with attention flow: the defaults finish in about a second, flow runs long enough to leave it
                    leave_mid_run(server, "attribution", {"model": "demo:reverse", "text": LETTERS31[::-1],
                                                          "attr_methods": "rollout,flow,grad_x_input,occlusion"})
                )  # fmt: skip
                after = rss_bytes(server.process.pid)
                rows.append(["visitor leaves mid-run (reverse demo, Attribution with flow, 31 letters)", "-", "-", "-",
                             f"{before / 2**20:.0f} / - / {after / 2**20:.0f}", "-",
                             f"{seen:.1f} (worker seen), left 1 s later", f"{stopped:.2f}", "-", "-"])  # fmt: skip
            log_tracebacks = server.log().count("Traceback")
        finally:
            server.stop()
    print(
        f"\n{args.sessions} ordinary sessions (reverse demo), a new input every {args.interval:g} s, {args.changes} "
        f"changes each; work budget {args.work_mb} MB; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())}; server RSS {start_rss / 2**20:.0f} MB after a first "
        "ordinary session (each attack's row: its own before / peak / after)"
    )
    print(
        table(
            ["attack", "p95 before (s)", "p95 during (s)", "ratio", "server RSS before / peak / after (MB)",
             "worker peak RSS (MB)", "attack's own seconds", "s until stopped after leaving", "tracebacks on pages",
             "upload bytes before / after"],
            rows,
        )
    )  # fmt: skip
    print(f"tracebacks in the server log: {log_tracebacks}")


if __name__ == "__main__":
    main()
