"""Headless Chromium on the Attention page of a GPT-2-small-shaped folder at 1,024 tokens (pooled views, a window).

From the server's answer to every chart drawn, and the bytes the page receives.

    python -m benchmarks.bench_attention_long [--tokens 1024] [--short 128] [--repeats 3] [--views one grid ...]

Target (the long-input views): at 1,024 tokens, from the server's answer to every chart drawn <= 2 s, and the page's
payload <= 2 MB. Side by side in one server, the baseline: the same view of the same model at --short tokens (every
weight drawn, no pooling); the ratio is long / short. Each visit is a new session (a new tab of one browser context) on a text the
server holds already (its caches answer: what is measured is building, sending and drawing the charts), after one
untimed visit that runs the model and fills the browser's cache with the app's scripts.

Timed in the page (performance.now()): every websocket message's arrival and size, and the first animation frame at
which the script is idle and every chart is drawn. "answer -> drawn": from the last message before that frame (the
server's answer complete) to it; "first chart message -> drawn" and "navigation -> drawn" beside it; "received": the
bytes of every message of the visit.

The lazy capture (model.capture(..., lazy=True)) is used where the library has it; otherwise the server stands it in
by harness/lazy_adapter.EagerLazy over the eager capture, with a work budget large enough for that capture (the table
says which ran). Random weights built with transformers (benchmarks/bench_load_hf.py's GPT-2 small folder, cached).
Needs /usr/bin/chromium and playwright.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_load_hf import DEFAULT_FOLDERS, folder_for  # noqa: E402
from benchmarks.common import table  # noqa: E402
from harness import lazy_adapter  # noqa: E402
from harness.browser import ROOT, chromium, free_port, healthy  # noqa: E402

# Recorded from the page's first script on: each websocket message's time and size (Streamlit's are binary frames).
RECORD_JS = """
window.__msgs = [];
const Native = window.WebSocket;
class Recorded extends Native {
  constructor(...args) {
    super(...args);
    this.addEventListener('message', e => {
      const d = e.data;
      const n = d.byteLength !== undefined ? d.byteLength : (d.size !== undefined ? d.size : d.length);
      window.__msgs.push([performance.now(), n]);
    });
  }
}
window.WebSocket = Recorded;
"""
# The first frame at which the script is idle and `n` charts are drawn (each with its heatmap image or its cells).
DRAWN_JS = """([n]) => new Promise(resolve => {
  const check = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    const plots = [...document.querySelectorAll('.js-plotly-plot')];
    const drawn = plots.filter(p => p._fullLayout && p.querySelector('.hm image, .heatmaplayer image, .hm'));
    if (app && app.getAttribute('data-test-script-state') === 'notRunning' && drawn.length >= n) {
      resolve(performance.now());
    } else {
      requestAnimationFrame(check);
    }
  };
  check();
})"""
CHARTS = {"one": 2, "grid": 1, "overview": 2, "sinks": 1}  # charts of each view at a long input
CONTINUATION = 24  # tokens the model writes after the text (the server's decoding cap): the page shows text + these
SHORT_CHARTS = {"one": 1, "grid": 1, "overview": 1, "sinks": 1}


def text_of(folder: Path, tokens: int) -> str:
    """Words of the benchmarks' sentences until the folder's tokenizer reads `tokens` tokens (not more)."""
    from tokenizers import Tokenizer

    from harness.byte_level import sentences

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    words, seed = [], 0
    while len(tok.encode(" ".join(words)).ids) < tokens:
        words += " ".join(sentences(seed)).split()
        seed += 1
    low, high = 0, len(words)
    while low < high:  # the most words that stay within `tokens`
        mid = (low + high + 1) // 2
        low, high = (mid, high) if len(tok.encode(" ".join(words[:mid])).ids) <= tokens else (low, mid - 1)
    return " ".join(words[:low])


def start_server(tmp: Path, folder: Path, adapter: bool) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONUNBUFFERED": "1", "TRANSFORMER_VIZ_FOLDERS": str(folder.parent),
           "VIZ_MAX_STEPS": str(CONTINUATION)}  # fmt: skip
    if adapter:  # the eager capture of every map at 1,024 tokens: a budget that holds it (the lazy one needs less)
        env.update(VIZ_WORK_MB="16000", VIZ_WORK_GOPS="1000000")
    boot = (
        "import sys; sys.path.insert(0, '.');"
        + ("from harness import lazy_adapter; lazy_adapter.install();" if adapter else "")
        + "from streamlit.web.cli import main;"
        + f"sys.argv = ['streamlit', 'run', 'app.py', '--server.headless', 'true', '--server.port', '{port}',"
        + " '--server.address', '127.0.0.1', '--server.fileWatcherType', 'none']; main()"
    )
    log = open(tmp / "server.log", "wb")
    proc = subprocess.Popen([sys.executable, "-c", boot], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)  # fmt: skip
    origin = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while not healthy(origin):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError((tmp / "server.log").read_text()[-3000:])
        time.sleep(0.3)
    return proc, origin


def first_visit(browser, origin: str) -> None:
    """The app's root once, as the first person after a start opens it (harness/browser.AppServer.first_visit)."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(origin, wait_until="load", timeout=300_000)
        page.locator('[data-testid="stSidebarNav"]').wait_for(timeout=300_000)
    finally:
        context.close()


def visit(context, url: str, charts: int, timeout_s: float) -> dict:
    """One new session (a new tab of `context`, whose cache holds the app's scripts after its first visit) on `url`:
    times in ms from navigation, and the bytes received."""
    page = context.new_page()
    try:
        page.goto(url, wait_until="commit", timeout=timeout_s * 1000)
        try:
            drawn = page.wait_for_function(DRAWN_JS, arg=[charts], timeout=timeout_s * 1000).json_value()
        except Exception:
            page.screenshot(path=str(Path(tempfile.gettempdir()) / "bench_attention_long.png"), full_page=True)
            raise
        msgs = page.evaluate("window.__msgs")
        if page.locator('[data-testid="stException"]').count():
            raise RuntimeError(f"the page shows an exception: {url}")
        before = [m for m in msgs if m[0] <= drawn]
        big = [m for m in before if m[1] > 20_000]  # messages carrying a chart
        return dict(
            drawn=drawn,
            answer=drawn - before[-1][0],
            first_chart=drawn - big[0][0] if big else float("nan"),
            bytes=sum(m[1] for m in msgs),
        )
    finally:
        page.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--short", type=int, default=128, help="the baseline's tokens (every weight drawn)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--views", nargs="*", default=["one", "grid", "overview", "sinks"], choices=list(CHARTS))
    parser.add_argument("--folders", type=Path, default=DEFAULT_FOLDERS)
    args = parser.parse_args()
    adapter = not lazy_adapter.available()
    folder = folder_for("gpt2", False, args.folders)
    long_text, short_text = text_of(folder, args.tokens - CONTINUATION), text_of(folder, args.short - CONTINUATION)
    start = f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, load {os.getloadavg()[0]:.2f}"
    print(f"start: {start}; capture: {'eager, through the adapter' if adapter else 'lazy'}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, chromium() as browser:
        proc, origin = start_server(Path(tmp), folder, adapter)
        try:
            first_visit(browser, origin)
            for view in args.views:
                samples = {}
                for name, text, charts in (("long", long_text, CHARTS[view]), ("short", short_text,
                                                                                SHORT_CHARTS[view])):  # fmt: skip
                    query = urllib.parse.urlencode({"model": f"path:{folder}", "text": text, "att_view": view})
                    url = f"{origin}/attention?{query}"
                    context = browser.new_context(viewport={"width": 1400, "height": 1000})
                    context.add_init_script(RECORD_JS)
                    try:  # untimed: runs the model once, fills the server's caches and the browser's
                        visit(context, url, charts, 900)
                        samples[name] = [visit(context, url, charts, 300) for _ in range(args.repeats)]
                    finally:
                        context.close()
                med = {n: {k: statistics.median(s[k] for s in v) for k in v[0]} for n, v in samples.items()}
                load = f"{os.getloadavg()[0]:.2f}"
                rows.append([view, f"{med['long']['answer'] / 1000:.2f}", f"{med['short']['answer'] / 1000:.2f}",
                             f"{med['long']['answer'] / max(med['short']['answer'], 1e-9):.2f}x",
                             f"{med['long']['first_chart'] / 1000:.2f}", f"{med['long']['drawn'] / 1000:.2f}",
                             f"{med['long']['bytes'] / 2**20:.2f}", f"{med['short']['bytes'] / 2**20:.2f}", load])  # fmt: skip
                print(" | ".join(rows[-1]), flush=True)
        finally:
            os.killpg(proc.pid, 15)
            proc.wait(timeout=30)
    end = f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, load {os.getloadavg()[0]:.2f}"
    print(f"end: {end}")
    print(
        table(
            [
                "view",
                f"answer -> drawn at {args.tokens} (s)",
                f"at {args.short} (s)",
                "ratio",
                "first chart message -> drawn (s)",
                "navigation -> drawn (s)",
                f"received at {args.tokens} (MB)",
                f"at {args.short} (MB)",
                "load",
            ],  # fmt: skip
            rows,
            title=f"Attention page of GPT-2 small at {args.tokens} tokens, in Chromium ({start}; capture: "
            f"{'eager through the adapter' if adapter else 'lazy'}; median of {args.repeats})",
        )
    )
    print("targets: answer -> drawn <= 2 s, received <= 2 MB")


if __name__ == "__main__":
    main()
