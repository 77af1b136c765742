"""Server time of a view with heads switched off against the plain view (issue 14), side by side in one process.

    python -m benchmarks.bench_interventions                 # reverse demo at 20 tokens, attention and decoding pages
    python -m benchmarks.bench_interventions --repeats 9     # more runs per median
    python -m benchmarks.bench_interventions --base          # also: head importance of a base-size model (144 heads)

Target (issue 14): an ablated view of a demo model at 20 tokens costs <= 2x the plain view on the server.
Each figure is the median of --repeats page runs in AppTest (sidebar, cached model calls, figures, serialisation),
the plain and the ablated view taken in turn (plain, ablated, plain, ...) so that both see the same machine:
- first load: a new input, every cache emptied before each run: the model runs (the plain view: one greedy decoding
  and one capture; the ablated view also decodes and captures the changed model, and shows the change);
- rerun: the same view again, everything cached (what every later click that changes nothing about the model costs);
- tick a head: the ablated view after one more head is switched off (the changed model runs again, the plain is cached).
CPU time of this process is the target's measure (on a shared machine wall time mostly says how busy the neighbours
are); both are printed, with the load average beside each table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_pages import load, timed  # noqa: E402
from benchmarks.common import table  # noqa: E402
from harness.apptest import open_page  # noqa: E402

TEXT = "abcdefghijklmnopqrs"  # 19 letters and </s>: 20 source tokens
ABLATED = "c1.0,c1.1"  # two of the reverse demo's four cross-attention heads of its last layer
PAGES = {"attention": "att_off", "decoding": "dec_off"}


def clear_caches() -> None:
    from ui.serving import caches

    for cache in (caches.CAPTURES, caches.TRACES, caches.HTML, caches.IMPORTANCE, caches.MATCHES):
        cache.clear()


def first_loads(page: str, key: str, repeats: int) -> dict[str, list[tuple[float, float]]]:
    """(wall, CPU) of opening the page on a new input, plain and ablated in turn, caches emptied before each."""
    runs = {"plain": [], "ablated": []}
    for _ in range(repeats):
        for name, params in (("plain", {}), ("ablated", {key: ABLATED})):
            clear_caches()
            holder = {}
            runs[name].append(
                timed(lambda: holder.setdefault("at", open_page(page, "demo:reverse", 600, text=TEXT, **params)))
            )
            if holder["at"].exception:
                raise RuntimeError(f"{page} {name}: {holder['at'].exception}")
    return runs


def reruns(page: str, key: str, repeats: int) -> dict[str, list[tuple[float, float]]]:
    """(wall, CPU) of running the same view again (cached), plain and ablated in turn; and of ticking one more head."""
    views = {name: open_page(page, "demo:reverse", 600, text=TEXT, **params)
             for name, params in (("plain", {}), ("ablated", {key: ABLATED}))}  # fmt: skip
    runs = {"plain": [], "ablated": [], "tick a head": []}
    for _ in range(repeats):
        for name, at in views.items():
            runs[name].append(timed(lambda: at.run()))
    ticking = views["ablated"]
    ticking.session_state[f"{key}_open"] = True  # the expander open: its buttons drawn
    ticking.run()
    prefix = key.split("_")[0]
    for i in range(repeats):  # head 2 of layer 1 off, on, off...: each run decodes and captures a new changed model
        clear_caches()
        ticking.run()  # plain and first ablated view cached again, untimed
        heads = [0, 1, 2] if i % 2 == 0 else [0, 1, 3]
        button = ticking.button_group(key=f"{prefix}_off_c1")
        runs["tick a head"].append(timed(lambda b=button, h=heads: b.set_value(h).run()))
        if ticking.exception:
            raise RuntimeError(f"{page} tick: {ticking.exception}")
    return runs


def median_ms(runs: list[tuple[float, float]], which: int) -> float:
    return statistics.median(r[which] for r in runs) * 1e3


def base_importance(repeats: int) -> list[list]:
    """Head importance of a base-size model (random weights, vocabulary 8000) at 20 tokens: 144 passes."""
    import torch

    from benchmarks.bench_pages import words
    from model import Tokenizer, TransformerConfig, Vocab, build_model
    from model.analysis.importance import head_importance

    vocab = Vocab.build([f"w{i}" for i in range(8000 - 4)], level="word")
    config = TransformerConfig.preset("base", src_vocab_size=8000, tgt_vocab_size=8000, max_len=512)
    model, tokenizer = build_model(config, seed=0).eval(), Tokenizer(vocab, vocab)
    text = words(20)
    rows = []
    for target, what in ((words(20, seed=1), "target of 20 tokens (teacher forcing)"),):
        times = [timed(lambda: head_importance(model, tokenizer, text, target)) for _ in range(max(1, repeats // 3))]
        rows.append([f"base 6+6 x 8 heads, {what}", 144, f"{statistics.median(t[0] for t in times):.2f}",
                     f"{statistics.median(t[1] for t in times):.2f}", f"torch threads {torch.get_num_threads()}"])  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--base", action="store_true", help="also time head importance of a base-size model")
    args = parser.parse_args()
    from model.checkpoints.demos import list_demos
    from ui.serving.threads import set_server_threads

    if not any(d.name == "reverse" for d in list_demos()):
        sys.exit("checkpoints/reverse is not there: python -m model.train --task reverse --out checkpoints/reverse")
    print(f"torch threads {set_server_threads()} (the server's setting); {load()}")
    rows, summary = [], []
    for page, key in PAGES.items():
        started = time.perf_counter()
        first, again = first_loads(page, key, args.repeats), reruns(page, key, args.repeats)
        baseline = {"first load": median_ms(first["plain"], 1), "rerun": median_ms(again["plain"], 1)}
        measured = [("first load", "plain", first["plain"]), ("first load", "ablated", first["ablated"]),
                    ("rerun", "plain", again["plain"]), ("rerun", "ablated", again["ablated"]),
                    ("tick a head", "ablated", again["tick a head"])]  # fmt: skip
        for what, name, timings in measured:
            against = "rerun" if what == "rerun" else "first load"  # ticking a head runs the model, as a new input does
            cpu, wall, plain_cpu = median_ms(timings, 1), median_ms(timings, 0), baseline[against]
            rows.append([page, what, name, f"{wall:.0f}", f"{cpu:.0f}", f"{cpu / plain_cpu:.2f}x ({against})", load()])
            if name != "plain":
                summary.append([f"{page}, {what}: ablated / plain {against} (CPU)", f"{cpu / plain_cpu:.2f}x",
                                "<= 2x", "yes" if cpu <= 2 * plain_cpu else "NO"])  # fmt: skip
        print(f"  ({page}: {time.perf_counter() - started:.0f} s)", file=sys.stderr)
    print(f"\nreverse demo, {len(TEXT) + 1} source tokens, heads off: {ABLATED}; medians of {args.repeats} runs")
    print(table(["page", "run", "view", "wall ms", "CPU ms", "CPU vs plain", "load average"], rows))
    print(f"\nTarget (issue 14): an ablated view costs <= 2x the plain view; {load()}")
    print(table(["measure", "ratio", "bound", "met"], summary))
    if args.base:
        print(f"\nHead importance, one pass per head; {load()}")
        print(table(["model", "heads", "wall s", "CPU s", ""], base_importance(args.repeats)))


if __name__ == "__main__":
    main()
