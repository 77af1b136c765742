"""Figures for papers and slides (time of one, SVG size of a 12 x 12-head grid) and the notebook widget's drawing.

    python -m benchmarks.bench_figures              # every table
    python -m benchmarks.bench_figures --runs 5

Targets: a figure from the command line <= 3 s after the model is loaded (the one-head view of a demo); a 12 x 12-head
grid as SVG <= 2 MB; the widget on a demo first drawn <= 1 s after the cell runs, a layer/head change <= 100 ms.

Tables (each prints the date and the load average; the machine may be shared):
1. figure: the demo `reverse` loaded once, then cli.figure.figure_bytes (capture, the view, kaleido with the system
   Chromium) for each format: the first (Chromium starting) and the median of the next runs. Baseline, side by side:
   the same capture and figure written through the same Chromium as plotly draws it (a raster heatmap inside, no
   vector cells: render(..., vector=False)): ratio = ours / baseline. The whole command (`python -m cli.figure`, a new process: Python, torch
   and Chromium starting) is timed once beside it.
2. grid size: a randomly initialised model of 12 encoder layers x 12 heads (real shape, random weights) on inputs of
   16 and 32 tokens: the SVG bytes of every layer x head (overview) and of all 12 heads of a layer (grid), against
   plotly's own SVG of the same figure (one embedded raster per heatmap) as the baseline.
3. widget: in Python, viz.notebook.show on the demo (capture, decoding, the widget's data) and the JSON sent; in
   headless Chromium (the front end on a page, harness/notebook_page.py), the first drawing and a layer or head
   change (model.set as anywidget does, to the end of the redraw), median of --runs. Baseline: the first drawing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import _loadavg, table

ROOT = Path(__file__).resolve().parents[1]
TEXT = "stressed"


def now_line() -> str:
    return f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {_loadavg()}"


def figure_table(runs: int) -> None:
    from cli.figure import figure_bytes
    from cli.pack import resolve_model
    from model import capture, load_checkpoint
    from viz.figure_export import render
    from viz.figure_views import view_figure

    t0 = time.perf_counter()
    model, tokenizer = load_checkpoint(resolve_model("demo:reverse"))
    load_s = time.perf_counter() - t0
    rows = []
    for fmt in ("svg", "pdf", "png"):
        first = time.perf_counter()
        figure_bytes(model, tokenizer, TEXT, "one", "page", fmt)
        first = time.perf_counter() - first
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            figure_bytes(model, tokenizer, TEXT, "one", "page", fmt)
            times.append(time.perf_counter() - t)
        base = []
        for _ in range(runs):
            t = time.perf_counter()
            fig = view_figure("one", capture(model, tokenizer, TEXT))
            render(fig, fmt, "page", vector=False)  # plotly's figure as it is: heatmap as a raster, no conversion
            base.append(time.perf_counter() - t)
        ours, theirs = statistics.median(times), statistics.median(base)
        rows.append([fmt, f"{first:.2f}", f"{ours:.2f}", f"{theirs:.2f}", f"{ours / theirs:.2f}x",
                     "yes" if ours <= 3 else "NO"])  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "cli.figure", "--model", "demo:reverse", "--text", TEXT, "--view", "one",
             "--out", str(Path(folder) / "one.pdf")],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        whole = time.perf_counter() - t
    print(
        table(
            ["format", "first s (Chromium starts)", "after s (median)", "baseline s", "ratio", "<= 3 s"],
            rows,
            title=f"One-head figure of demo:reverse after loading ({load_s:.2f} s); {now_line()}; "
            f"whole command in a new process {whole:.2f} s",
        )
    )


def grid_table() -> None:
    from model import Tokenizer, TransformerConfig, Vocab, build_model, capture
    from viz.figure_export import render
    from viz.figure_views import view_figure

    vocab = Vocab.build("abcdefghijklmnopqrstuvwxyz", level="char")
    config = TransformerConfig.preset(
        "tiny", src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), d_model=192, n_heads=12, d_ff=384,
        n_encoder_layers=12, n_decoder_layers=1, max_len=64,
    )  # fmt: skip
    model = build_model(config, seed=0).eval()
    tokenizer = Tokenizer(vocab, vocab)
    rows = []
    for n in (15, 31):  # and </s>: 16 and 32 tokens
        text = ("thequickbrownfoxjumpsoverthelazydog" * 2)[:n]
        cap = capture(model, tokenizer, text)
        for view in ("overview", "grid"):
            fig = view_figure(view, cap, kind="encoder_self", layer=11)
            t = time.perf_counter()
            ours = render(fig, "svg", "page")
            took = time.perf_counter() - t
            base = render(fig, "svg", "page", vector=False)
            rows.append([n + 1, view, f"{len(ours) / 1e6:.2f}", f"{took:.1f}", f"{len(base) / 1e6:.2f}",
                         f"{len(ours) / len(base):.2f}x", "yes" if len(ours) <= 2e6 else "NO"])  # fmt: skip
    print(
        table(
            ["tokens", "view", "SVG MB (vector cells)", "s", "baseline MB (raster)", "ratio", "<= 2 MB"],
            rows,
            title=f"12 layers x 12 heads (random weights) as SVG; {now_line()}",
        )
    )


def widget_table(runs: int) -> None:
    from harness.browser import chromium
    from harness.notebook_page import widget_page
    from model import load_checkpoint
    from model.checkpoints.demos import list_demos
    from viz.notebook import show

    demo = {d.name: d for d in list_demos()}["reverse"]
    model, tokenizer = load_checkpoint(demo.path)
    show(model, tokenizer, TEXT)  # warm
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        widget = show(model, tokenizer, TEXT)
        times.append(time.perf_counter() - t)
    python_s = statistics.median(times)
    sent = len(json.dumps(widget.data))
    first, change = [], []
    with chromium() as browser:
        for _ in range(runs):
            page = browser.new_page()
            page.route("**/*", lambda route: route.abort())
            page.set_content(widget_page(widget))
            page.wait_for_function("window.__rendered !== undefined")
            first.append(page.evaluate("window.__rendered - window.__start"))
            change.append(
                page.evaluate(
                    """() => { const t = performance.now(); window.__model.set('layer', 0);
                       window.__model.set('head', 1); return performance.now() - t; }"""
                )
            )
            page.close()
    f, c = statistics.median(first), statistics.median(change)
    print(
        table(
            ["what", "ms (median)", "ratio to the first drawing", "target"],
            [
                ["Python: show() (capture, decoding, data)", f"{python_s * 1000:.0f}", "", ""],
                [
                    "first drawn (front end)",
                    f"{f:.1f}",
                    "1.00x",
                    "cell to drawn <= 1000 ms: " + ("yes" if python_s * 1000 + f <= 1000 else "NO"),
                ],
                [
                    "layer and head change (two redraws)",
                    f"{c:.1f}",
                    f"{c / f:.2f}x",
                    "<= 100 ms: " + ("yes" if c <= 100 else "NO"),
                ],
            ],  # fmt: skip
            title=f"Notebook widget on demo:reverse ({sent / 1e3:.0f} KB of data); {now_line()}",
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each measurement (median)")
    parser.add_argument("--only", choices=["figure", "grid", "widget"], help="one table only")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1: as the app's server runs; on a busy machine "
        "more threads wait for each other, and a demo's capture takes seconds instead of milliseconds)",
    )
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    print(f"start: {now_line()}; torch threads {args.threads}", flush=True)
    if args.only in (None, "figure"):
        figure_table(args.runs)
    if args.only in (None, "grid"):
        grid_table()
    if args.only in (None, "widget"):
        widget_table(args.runs)
    from viz import figure_export

    figure_export.stop()


if __name__ == "__main__":
    main()
