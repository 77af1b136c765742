"""Server-side time of the "Inside attention" page with a shipped demo model and a 20-token input.

    python -m benchmarks.bench_inside [--model reverse] [--repeats 8]

Target (issue 13): <= 150 ms per rerun after the first load. Each page runs in AppTest (the whole script:
sidebar, cached qkv capture, math, figure building and serialisation). "first" includes loading the model
and recording Q, K, V; "after" is the median of reruns with a new selection each time (head, query token,
kind, the scale control), as when a user clicks. The baseline, in the same process and run alternately,
is the Attention page changing its head (README, idle machine: 129 ms); the light Model page (29 ms) is a second
reference. Under load every figure grows; the ratios stay comparable.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from benchmarks.common import table  # noqa: E402
from harness.apptest import charts, open_page  # noqa: E402
from model import capture, load_checkpoint  # noqa: E402
from model.checkpoints.demos import list_demos  # noqa: E402

TWENTY = {
    "reverse": "abcdefghijklmnopqrs",
    "copy": "abcdefghijklmnopqrs",
    "dates": "saturday 21st of nov",
    "translate": "the red car sees a small dog and the old cats eat the green apples",
}


def inside_change(at, i: int) -> None:
    what = i % 4
    if what == 0:
        at.selectbox(key="in_head").set_value(
            (at.selectbox(key="in_head").value + 1) % len(at.selectbox(key="in_head").options)
        )
    elif what == 1:
        at.selectbox(key="in_query").set_value(
            (at.selectbox(key="in_query").value + 1) % len(at.selectbox(key="in_query").options)
        )
    elif what == 2:
        at.radio(key="in_kind").set_value(["encoder_self", "decoder_self", "cross"][(i // 4) % 3])
    else:
        at.toggle(key="in_noscale").set_value(not at.toggle(key="in_noscale").value)


def attention_change(at, i: int) -> None:
    at.selectbox(key="att_head").set_value(["average", 0, 1, 2][i % 4])


def model_change(at, i: int) -> None:
    at.radio(key="model_shape_kind").set_value(["encoder self", "decoder self", "cross"][i % 3])


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    demos = {d.name: d for d in list_demos()}
    parser.add_argument("--model", default="reverse" if "reverse" in demos else next(iter(demos), None))
    parser.add_argument("--repeats", type=int, default=8)
    args = parser.parse_args()
    if args.model not in demos:
        sys.exit(f"no shipped demo model {args.model!r} in checkpoints/ (found: {', '.join(demos) or 'none'})")
    text = TWENTY.get(args.model, "abcdefghijklmnopqrs")
    pages = {
        "attention (baseline)": ("attention", attention_change),
        "model (light page)": ("model", model_change),
        "inside": ("inside", inside_change),
    }
    first, apps, times = {}, {}, {name: [] for name in pages}
    load_before = load()
    for name, (page, _) in pages.items():
        t0 = time.perf_counter()
        extra = {"model_view": "shapes"} if page == "model" else {}  # the view whose control model_change turns
        apps[name] = open_page(page, f"demo:{args.model}", text=text, **extra)
        first[name] = time.perf_counter() - t0
        assert not apps[name].exception, apps[name].exception
    for i in range(args.repeats):  # alternate, so both pages see the same machine load
        for name, (_, change) in pages.items():
            at = apps[name]
            t0 = time.perf_counter()
            change(at, i)
            at.run()
            times[name].append(time.perf_counter() - t0)
            assert not at.exception, at.exception
    base = statistics.median(times["attention (baseline)"])
    rows = []
    for name in pages:
        after = statistics.median(times[name])
        rows.append(
            [
                name,
                len(charts(apps[name])),
                f"{first[name] * 1e3:.0f}",
                f"{after * 1e3:.0f}",
                f"{max(times[name]) * 1e3:.0f}",
                f"{after / base:.2f}",
                "yes" if after <= 0.15 else "NO",
            ]
        )
    print(
        f"model {args.model}; input {text!r} (+ </s>); {args.repeats} reruns each; "
        f"load average (1/5/15 min) before {load_before}, after {load()}; {os.cpu_count()} CPUs"
    )
    print(
        table(
            ["page", "figures", "first load ms", "after, median ms", "after, max ms", "× baseline", "<= 150 ms"], rows
        )
    )
    library(args.model, text, args.repeats)


def library(model_name: str, text: str, repeats: int) -> None:
    """capture() itself: plain, with Q/K/V recorded, and with interventions, alternately in one process."""
    demo = {d.name: d for d in list_demos()}[model_name]
    model, tok = load_checkpoint(demo.path)
    cfg = model.config
    all_cross = [("cross", i, h) for i in range(cfg.n_decoder_layers) for h in range(cfg.n_heads)]
    calls = {
        "capture (baseline)": {},
        "qkv=True": {"qkv": True},
        "ablate every cross head": {"ablate": all_cross},
        "positional='off'": {"positional": "off"},
    }
    before, threads = load(), torch.get_num_threads()
    torch.set_num_threads(1)  # two intra-op threads on a shared 2-core machine spin against each other (50x slower)
    try:
        samples: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(repeats + 1):  # alternate the calls, so each sees the same load; the first round warms up
            for name, kw in calls.items():
                t0 = time.perf_counter()
                capture(model, tok, text, **kw)
                samples[name].append(time.perf_counter() - t0)
    finally:
        torch.set_num_threads(threads)
    times = {name: statistics.median(s[1:]) for name, s in samples.items()}
    base = times["capture (baseline)"]
    print(
        f"\ncapture() with the model's own greedy output, 1 torch thread, {repeats} calls each alternately (median); "
        f"load average before {before}, after {load()}"
    )
    print(
        table(["call", "median ms", "× baseline"], [[n, f"{t * 1e3:.1f}", f"{t / base:.2f}"] for n, t in times.items()])
    )


if __name__ == "__main__":
    main()
