"""Headless Chromium against `streamlit run app.py`: from changing the input text to every chart drawn, per page.

    python -m benchmarks.bench_browser [--tokens 128] [--repeats 3] [--watcher]

Target 2 (issue 11): base model at 128 source tokens, from the new text submitted to every chart of the page
drawn <= 3 s. Printed beside it: the server's CPU time in the same interval (read from /proc), so server and
browser can be told apart; "new input" runs the model (a capture, or the greedy trace), "seen input" is a text
this server already holds (its caches answer; what is left is building, sending and drawing).
The pages take turns (one measurement each per round), so on a shared machine each page's median sees the same
neighbours; every row prints the range of load averages (1 minute) its samples started and ended at.
--watcher also starts the server with Streamlit's file watcher on (fileWatcherType auto) beside the app's
setting (none) and prints the server's CPU until the first page is drawn. Needs /usr/bin/chromium and playwright.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_pages import base_checkpoint, words  # noqa: E402
from benchmarks.common import table  # noqa: E402
from harness.browser import (  # noqa: E402
    ROOT,
    AppServer,
    Watch,
    chromium,
    free_port,
    screenshot,
    streamlit_command,
    wait_idle,
)

# page -> URL parameters, and the JavaScript condition "drawn for this input" (first source token `t`, count `n`)
PAGES = {
    "attention": ({}, "plots.length === 1 && firstX(plots[0]) === t"),
    "decoding": (
        {},
        "plots.length === 4 && plots.every(p => p._fullLayout) && "
        "firstX(plots.find(p => title(p).startsWith('Cross-attention of the new'))) === t",
    ),
    "positional": ({"pe_view": "mine"}, "plots.length === 2 && firstX(plots[0]) === t && firstX(plots[1])"),
}  # the model page draws nothing that depends on the input text (its shapes table says only S): left out
DRAWN_JS = """([t, n]) => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    const plots = [...document.querySelectorAll('.js-plotly-plot')];
    const title = p => (p.querySelector('.gtitle') || {}).textContent || '';
    const firstX = p => { const e = p && p.querySelector('.xtick text'); return e ? e.textContent : null; };
    return CONDITION;
}"""


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process and its waited-for children, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def load() -> str:
    return "%.2f" % os.getloadavg()[0]


def submit(page, text: str) -> None:
    box = page.get_by_role("textbox", name="Input text (source)", exact=True)
    box.fill(text)
    box.press("Control+Enter")


def wait_drawn(page, page_name: str, first: str, n: int, timeout_s: float = 600) -> None:
    js = DRAWN_JS.replace("CONDITION", PAGES[page_name][1])
    page.wait_for_function(js, arg=[first, n], timeout=timeout_s * 1000, polling=50)


def inotify_watches(pid: int) -> int:
    """Folders and files a process watches through inotify (the watchdog observer's watches)."""
    count = 0
    for fd in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            count += sum(line.startswith("inotify wd:") for line in fd.read_text().splitlines())
        except OSError:
            pass
    return count


def first_page_cpu(
    browser, tmp: Path, watcher: str, model_url: str, extra: tuple[str, ...] = ()
) -> tuple[float, float, int]:
    """(server CPU s at health, at the first attention page drawn, inotify watches) with a file watcher setting."""
    log = open(tmp / f"watch-{watcher}.log", "wb")
    port = free_port()
    proc = subprocess.Popen(
        [*streamlit_command(port, watcher), *extra],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "TMPDIR": str(tmp)},
        start_new_session=True,
    )
    try:
        import urllib.request

        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        at_health = cpu_seconds(proc.pid)
        w = Watch(browser, f"http://127.0.0.1:{port}")
        try:
            w.goto(f"http://127.0.0.1:{port}/?{model_url}")
            w.page.wait_for_function(
                "() => document.querySelectorAll('.js-plotly-plot .xtick').length > 0", timeout=300_000
            )
            wait_idle(w.page, 300)
        finally:
            w.close()
        return at_health, cpu_seconds(proc.pid), inotify_watches(proc.pid)
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
        log.close()


from model.checkpoints.serving import ENV as FOLDERS_ENV  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pages", nargs="*", default=list(PAGES))
    parser.add_argument("--watcher", action="store_true")
    parser.add_argument("--watcher-only", action="store_true", help="only the file watcher comparison")
    args = parser.parse_args()
    import urllib.parse

    with tempfile.TemporaryDirectory() as tmp_name, chromium() as browser:
        tmp = Path(tmp_name)
        os.environ[FOLDERS_ENV] = tmp_name  # the server may open this folder (server folders are off by default)
        path = base_checkpoint(tmp)
        n = args.tokens
        server = AppServer(tmp)
        rows = []
        if args.watcher_only:
            args.pages, args.watcher = [], True
        try:
            server.first_visit(browser)
            # Pages take turns, one measurement each per round: on a shared machine every page sees the same
            # spread of neighbours' load, and each row prints the range of load averages its samples saw.
            windows, texts, firsts = {}, {}, {}
            samples = {(p, kind): [] for p in args.pages for kind in ("new", "seen")}
            try:
                for p_index, page_name in enumerate(args.pages):
                    seeds = [p_index * 10 + i for i in range(args.repeats + 1)]  # inputs no other page has seen
                    texts[page_name] = [words(n, seed) for seed in seeds]
                    firsts[page_name] = [f"w{seed * 101 % 7996}" for seed in seeds]
                    w = windows[page_name] = Watch(browser, server.origin)
                    w.goto(
                        server.url(
                            "" if page_name == "attention" else page_name,  # the default page is /
                            model=f"path:{path}",
                            text=texts[page_name][0],
                            **PAGES[page_name][0],
                        )
                    )
                    wait_drawn(w.page, page_name, firsts[page_name][0], n)
                for i in range(1, args.repeats + 1):
                    for page_name in args.pages:
                        for kind, index in (("new", i), ("seen", i - 1)):
                            page, before = windows[page_name].page, os.getloadavg()[0]
                            cpu0, t0 = cpu_seconds(server.process.pid), time.perf_counter()
                            submit(page, texts[page_name][index])
                            wait_drawn(page, page_name, firsts[page_name][index], n)
                            wall, cpu = time.perf_counter() - t0, cpu_seconds(server.process.pid) - cpu0
                            samples[page_name, kind].append((wall, cpu, before, os.getloadavg()[0]))
            except Exception:
                for page_name, w in windows.items():
                    print(f"{page_name}: screenshot {screenshot(w.page, f'bench-browser-{page_name}')}; {w.problems()}")
                print(f"server log: {server.log()[-1500:]}")
                raise
            finally:
                for w in windows.values():
                    w.close()
            for (page_name, kind), out in samples.items():
                wall = statistics.median(o[0] for o in out)
                cpu = statistics.median(o[1] for o in out)
                loads = [o[2] for o in out] + [o[3] for o in out]
                rows.append(
                    [
                        page_name,
                        "new input (model runs)" if kind == "new" else "seen input (cached)",
                        f"{wall:.2f}",
                        f"{cpu:.2f}",
                        f"{max(0.0, wall - cpu):.2f}",
                        "yes" if wall <= 3 else "NO",
                        f"{min(loads):.1f}-{max(loads):.1f}",
                    ]
                )
        finally:
            server.stop()
        if rows:
            print(
                f"Base model, {n} source tokens: input changed -> every chart drawn in headless Chromium "
                f"(median of {args.repeats})"
            )
            print(
                table(
                    ["page", "input", "to drawn s", "server CPU s", "rest s (browser, waits)", "<= 3 s", "load avg"],
                    rows,
                )
            )
        if args.watcher:
            query = urllib.parse.urlencode({"model": f"path:{path}", "text": words(8)})
            wrows = []
            for label, watcher, extra in (
                ("none (config.toml)", "none", ()),
                ("auto, config.toml's blacklist", "auto", ()),
                ("auto, no blacklist (before)", "auto", ("--server.folderWatchBlacklist", "/nonexistent")),
            ):
                health, drawn, watches = first_page_cpu(browser, tmp, watcher, query, extra)
                wrows.append([label, f"{health:.2f}", f"{drawn:.2f}", watches, load()])
            print("\nServer CPU seconds from start: at health, and when the first page (base model, 8 tokens) is drawn")
            print(
                table(
                    ["file watcher", "CPU s at health", "CPU s at first page drawn", "inotify watches", "load avg"],
                    wrows,
                )
            )


if __name__ == "__main__":
    main()
