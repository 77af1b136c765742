"""The lecture pack's own charts: how often plotly draws them, and the time to open the pack, in headless Chromium.

    python -m benchmarks.bench_pack_open                 # every demo's default pack, 3 openings each way
    python -m benchmarks.bench_pack_open --demos translate --runs 5

plotly's automargin draws a chart again whenever the margins it started from do not hold its labels, until they
do. pack/static/lecture_pack.js starts each of the pack's own charts but the first of its kind from the margins of the last
chart of its kind drawn, moved by as much as its widest label differs. The baseline is the same page with that
switched off (every chart starts from its figure's own margins, as plotly draws it alone), opened alternately with
it in one browser.

Columns:
  charts         the pack's own charts (the precomputed inputs' views and the positional encoding's)
  restarts       drawings plotly's automargin started again, over all charts (its own count, read as it is set)
  open ms        navigation to every one of the pack's own charts drawn (median of the openings)
  ratio          open ms / open ms of the baseline
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import table  # noqa: E402
from harness.browser import VIEWPORT, chromium  # noqa: E402
from model import load_checkpoint  # noqa: E402
from model.checkpoints.checkpoint import load_card  # noqa: E402
from model.checkpoints.demos import list_demos  # noqa: E402
from pack.page import lecture_pack_html  # noqa: E402
from pack.records import bounded_inputs, pack_records  # noqa: E402

# the sibling's margins in pack/static/lecture_pack.js; replaced by `undefined`, every chart starts from its figure's own
SIBLING = "lastOfKind.get(upright) || lastOfKind.get(kind)"

# plotly's count of the drawings its automargin starts again (a private field of its full layout), counted as it is set
COUNT = """(() => { window.__restarts = 0; const seen = new WeakMap();
  Object.defineProperty(Object.prototype, '_redrawFromAutoMarginCount', {configurable: true,
    get() { return seen.get(this) || 0; },
    set(v) { if (v > (seen.get(this) || 0)) window.__restarts++; seen.set(this, v); } }); })();"""


def open_once(browser, path: Path, count: bool) -> tuple[float, int, int]:
    """(ms from navigation to the pack's own charts drawn, restarts (-1 when not counted), charts)."""
    context = browser.new_context(viewport=VIEWPORT)
    folder = path.parent.as_uri() + "/"
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(folder) else r.abort())
    if count:  # counted in openings of their own: the count's accessor is not in the timed ones
        context.add_init_script(COUNT)
    page = context.new_page()
    t0 = time.perf_counter()
    page.goto(path.as_uri(), wait_until="load", timeout=600_000)
    page.wait_for_function("document.body.dataset.drawn !== undefined", timeout=600_000)
    ms = 1000 * (time.perf_counter() - t0)
    restarts = page.evaluate("window.__restarts") if count else -1
    charts = int(page.evaluate("document.body.dataset.drawn"))
    context.close()
    return ms, restarts, charts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demos", nargs="*", default=None, help="demo names (default: every shipped demo)")
    parser.add_argument("--runs", type=int, default=3, help="openings of each page (each way)")
    args = parser.parse_args(argv)
    rows, med = [], statistics.median
    with chromium() as browser, tempfile.TemporaryDirectory() as tmp:
        for demo in [d for d in list_demos() if args.demos is None or d.name in args.demos]:
            model, tok = load_checkpoint(demo.path)
            texts, _ = bounded_inputs(load_card(demo.path).get("examples") or ["abc"])
            html = lecture_pack_html(pack_records(model, tok, texts, label=demo.name))
            if html.count(SIBLING) != 1:
                raise SystemExit(f"pack/static/lecture_pack.js no longer holds {SIBLING!r} once: update this benchmark")
            pages = {"sibling": Path(tmp) / f"{demo.name}.html", "own": Path(tmp) / f"{demo.name}-own.html"}
            pages["sibling"].write_text(html, encoding="utf-8")
            pages["own"].write_text(html.replace(SIBLING, "undefined"), encoding="utf-8")
            ms = {k: [] for k in pages}
            restarts, charts = {}, 0
            for _ in range(args.runs):  # alternately, so that both see the same load
                for k, path in pages.items():
                    ms[k].append(open_once(browser, path, count=False)[0])
            for k, path in pages.items():
                _, restarts[k], charts = open_once(browser, path, count=True)
            rows.append([
                demo.name, charts, f"{restarts['sibling']} / {restarts['own']}",
                f"{med(ms['sibling']):.0f} / {med(ms['own']):.0f}", f"{med(ms['sibling']) / med(ms['own']):.2f}x",
            ])  # fmt: skip
            print(f"{demo.name}: done", file=sys.stderr, flush=True)
    print(
        f"The pack's own charts: plotly's automargin restarts and the pack's open time, {args.runs} openings each way"
    )
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, load average "
          f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
    headers = ["pack", "charts", "restarts (sibling's margins / own)", "open ms (sibling's margins / own)", "ratio"]
    print(table(headers, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
