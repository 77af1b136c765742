"""One decode per (model, input, interventions), shared by the pages (issue 23): a new input opened on three pages in a
row (attention, decoding, Inside), in this process, each page a fresh AppTest session as a visitor following a link.

    python -m benchmarks.bench_pages_decode                      # base model at 64 and 128 source tokens
    python -m benchmarks.bench_pages_decode --tokens 64 --repeats 1

For each size and repeat, a new input (never seen by the process): first the decode alone (the shared decode,
ui.serving.caches.own_output: fused greedy decoding, nothing recorded, on the same weights, under another cache key), then the three pages with that input; then the
same three pages again with everything cached (the page's own drawing: "warm"). Printed per page, medians over
--repeats inputs: its run, its warm run, and its extra = run - warm (what the new input cost that page); for the
first page also extra - decode (everything of the new input but the decode). The baseline ("isolated") clears the
caches before each page, so each page decodes the input by itself, as before issue 23 (with today's cheaper
decoding page: before, that page decoded step by step with recording, about 25% dearer than the fused decode).
Targets (issue 23): a new input costs one decode plus at most 0.3 s (first page: extra - decode <= 0.3 s); a second
and third page cost at most 0.3 s more than their warm run (no second decode).
The base model is TransformerConfig.preset("base"), vocabulary 8000, random weights (bench_pages.base_checkpoint):
it never writes </s>, so each decode runs its full length (S + 50 steps): the worst case.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_pages import base_checkpoint, load, timed, words  # noqa: E402
from benchmarks.common import table  # noqa: E402
from harness.apptest import open_page  # noqa: E402
from model.checkpoints.serving import ENV as FOLDERS_ENV  # noqa: E402

PAGES = ("attention", "decoding", "inside")
TARGET_S = 0.3


def clear_caches() -> None:
    from ui.serving import caches

    for cache in (caches.CAPTURES, caches.TRACES, caches.QKV, caches.DECODES):
        cache.clear()


def open_timed(page: str, model: str, text: str) -> tuple[float, float]:
    holder = {}
    wall, cpu = timed(lambda: holder.setdefault("at", open_page(page, model, timeout=600, text=text)))
    if holder["at"].exception:
        raise RuntimeError(f"{page}: {holder['at'].exception}")
    return wall, cpu


def one_input(model_key: str, model, tok, text: str, isolated: bool) -> dict:
    """Times (wall, CPU) of the decode alone, each page with the new input, each page warm."""
    from ui.serving.caches import own_output

    out = {"decode": timed(lambda: own_output("bench: decode alone", text, model, tok))}  # the fused decode
    for page in PAGES:
        if isolated:
            clear_caches()
        out[page] = open_timed(page, model_key, text)
    for page in PAGES:  # everything cached now (isolated: the last page's capture; the others' are built again)
        if isolated:
            continue
        out[f"{page} warm"] = open_timed(page, model_key, text)
    return out


def median(samples: list[dict], key: str, i: int) -> float:
    return statistics.median(s[key][i] for s in samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, nargs="*", default=[64, 128])
    parser.add_argument("--repeats", type=int, default=3, help="new inputs per size (medians are printed)")
    parser.add_argument("--no-baseline", action="store_true", help="leave out the isolated (decode per page) rows")
    args = parser.parse_args()
    from model import load_checkpoint
    from ui.serving.threads import set_server_threads

    threads = set_server_threads()
    print(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; torch threads {threads}; {load()}")
    summary = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[FOLDERS_ENV] = tmp  # the app may open this folder (server folders are off by default)
        path = base_checkpoint(Path(tmp))
        model, tok = load_checkpoint(path)
        key = f"path:{path}"
        for page in PAGES:  # untimed: the app loads the model once (st.cache_resource), each page its modules
            open_timed(page, key, words(8))
        for n in args.tokens:
            seed = 1000 * n
            shared = [one_input(key, model, tok, words(n, seed + r), False) for r in range(args.repeats)]
            isolated = (
                []
                if args.no_baseline
                else [one_input(key, model, tok, words(n, seed + 500 + r), True) for r in range(args.repeats)]
            )
            decode_w, decode_c = median(shared, "decode", 0), median(shared, "decode", 1)
            rows = [["decode alone", f"{decode_w:.2f}", f"{decode_c:.2f}", "", "", "", ""]]
            for i, page in enumerate(PAGES):
                wall, cpu = median(shared, page, 0), median(shared, page, 1)
                warm_c = median(shared, f"{page} warm", 1)
                extra = cpu - warm_c
                beyond = extra - decode_c if i == 0 else extra
                base = f"{median(isolated, page, 1):.2f}" if isolated else "-"
                rows.append([page, f"{wall:.2f}", f"{cpu:.2f}", f"{warm_c:.2f}", f"{extra:.2f}",
                             f"{beyond:.2f}", base])  # fmt: skip
                what = "first page: extra - decode" if i == 0 else f"page {i + 1} ({page}): extra"
                summary.append([f"{n} tokens, {what} (CPU)", f"{beyond:.2f} s", f"<= {TARGET_S} s",
                                "yes" if beyond <= TARGET_S else "NO"])  # fmt: skip
            total = sum(median(shared, p, 1) for p in PAGES)
            print(f"\nbase model (512/8/2048, 6+6 layers, vocabulary 8000), {n} source tokens, {args.repeats} new "
                  f"inputs (medians, seconds); {load()}")  # fmt: skip
            print(table(["page (in order)", "run wall", "run CPU", "warm CPU", "extra CPU", "beyond target's base",
                         "isolated CPU (decodes itself)"], rows))  # fmt: skip
            share = decode_c / total if total else 0.0
            line = f"decode's share of the three pages' CPU: {share:.0%} ({decode_c:.2f} of {total:.2f} s)"
            if isolated:
                before = sum(median(isolated, p, 1) for p in PAGES)
                line += f"; isolated (each page decodes): {before:.2f} s, ratio shared/isolated {total / before:.2f}"
            print(line)
    print(f"\nsummary; {load()}")
    print(table(["measure", "measured", "target", "met"], summary))


if __name__ == "__main__":
    main()
