"""Server time and bytes of every page and view, for the paper's base model and for a shipped demo.

    python -m benchmarks.bench_pages                          # base model at 8/32/64/128 tokens + reverse at 20
    python -m benchmarks.bench_pages --tokens 128 --skip-demo # one size
    python -m benchmarks.bench_pages --growth                 # the growth table against layers x heads too
    python -m benchmarks.bench_pages --t5-base --tokens 128 --skip-demo   # a Hugging Face t5-base-shaped folder

Targets (issue 11), each a median of --repeats runs (checked on the server's CPU time per run, as the issue
measured it: on a shared machine wall time mostly says how busy the neighbours are; both are printed), the whole page script in AppTest (sidebar, cached model
calls, figures, serialisation), in this process:
1. a page run after the first load (same input, the view as chosen): base model at 128 source tokens <= 1.0 s,
   reverse demo at 20 tokens <= 100 ms; changing only a view selection (kind, layer, head, step, view)
   <= 150 ms at base/128: it recomputes nothing about the model. Every switch (e.g. att_view one -> grid) is timed
   on its own: the median of --repeats switches, each from the same starting value.
3. bytes sent to the browser for the attention page at base/128 <= 3 MB (the sum of the run's element protos).
6. growth: time and bytes against tokens (8..128), and against layers x heads (--growth).
"first" is the first run of a new input: the model runs then (capture, or the greedy trace on the decoding page).
The base model is TransformerConfig.preset("base") with vocabulary 8000 and random weights, saved with
save_checkpoint in a temporary folder and opened through the app's path: link. Random weights never write
</s>, so its decoding runs the full default length (S + 50 steps, the paper's limit): the worst case.
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

from benchmarks.common import table, target_row  # noqa: E402
from harness.apptest import charts, open_page  # noqa: E402

# page -> the views to time, each as its URL parameters (the page's own selectors, as a link opens them)
VIEWS = {
    "attention": [
        {"att_view": "one"},
        {"att_view": "grid"},
        {"att_view": "overview"},
        {"att_view": "bertviz", "att_bertviz": "head view"},
        {"att_view": "bertviz", "att_bertviz": "model view"},
    ],
    "positional": [{"pe_view": v} for v in ("matrix", "curves", "offsets", "similarity", "shift", "mine")],
    "decoding": [{}],
    "model": [{"model_view": v} for v in ("config", "params", "weights", "shapes")],
}


def view_name(params: dict) -> str:
    return " ".join(params.values()) or "-"


# page -> the view-only changes to time: (widget kind, key, values). Each switch from the first value to each of the
# others is timed on its own (the widget set back to the first value, untimed, before every timed switch): a
# median over alternations hid the dear switches (to the grid, bertviz, the overview) behind the cheap way back.
VIEW_CHANGES = {
    "attention": [
        ("selectbox", "att_layer", [1, 0]),
        ("radio", "att_kind", ["cross", "encoder_self", "decoder_self"]),
        ("selectbox", "att_head", ["average", 0]),
        ("segmented_control", "att_view", ["one", "grid", "overview", "bertviz"]),  # last: the head is the one view's
    ],
    "decoding": [("button", "dec_next", None), ("selectbox", "dec_layer", [1, 0])],
    "positional": [
        ("segmented_control", "pe_view", ["matrix", "curves", "offsets", "similarity", "shift", "mine"]),
    ],
    "model": [("segmented_control", "model_view", ["config", "params", "weights", "shapes"])],
}


def load() -> str:
    try:
        return "load %.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "load n/a"


def words(n_tokens: int, seed: int = 0) -> str:
    """n_tokens - 1 vocabulary words (the source then ends with </s>)."""
    return " ".join(f"w{(i * 37 + seed * 101) % 7996}" for i in range(n_tokens - 1))


def base_checkpoint(folder: Path, layers: int = 6, heads: int = 8) -> Path:
    from model import Tokenizer, TransformerConfig, Vocab, build_model, save_checkpoint

    vocab = Vocab.build([f"w{i}" for i in range(8000 - 4)], level="word")
    config = TransformerConfig.preset(
        "base",
        src_vocab_size=8000,
        tgt_vocab_size=8000,
        max_len=512,
        n_encoder_layers=layers,
        n_decoder_layers=layers,
        n_heads=heads,
    )
    path = folder / f"base_{layers}x{heads}"
    save_checkpoint(build_model(config, seed=0), Tokenizer(vocab, vocab), path, card={"examples": [words(8)]})
    return path


def sent_bytes(at) -> int:
    """Bytes of every element the last run sent (protobuf sizes; plotly figures are JSON inside them)."""
    total = 0
    stack = [at._tree]
    while stack:
        node = stack.pop()
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "ByteSize"):
            total += proto.ByteSize()
        stack.extend(getattr(node, "children", {}).values())
    return total


def timed(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def set_widget(at, kind: str, key: str, value) -> None:
    if kind == "button":
        at.button(key=key).click().run()
    else:
        getattr(at, kind)(key=key).set_value(value).run()


def measure_page(model: str, text: str, page: str, repeats: int) -> list[list]:
    """Rows: one per view: first load, rerun median (wall, CPU), bytes, charts; then the view-only changes."""
    rows = []
    for v_index, params in enumerate(VIEWS[page]):
        view = view_name(params)
        holder = {}
        first, _ = timed(lambda: holder.setdefault("at", open_page(page, model, timeout=600, text=f"{text}", **params)))
        at = holder["at"]
        if at.exception:
            raise RuntimeError(f"{page}/{view}: {at.exception}")
        runs = [timed(lambda: at.run()) for _ in range(repeats)]
        wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        rows.append(
            [
                page,
                view,
                f"{first:.2f}" if v_index == 0 else "(cached)",
                f"{wall * 1e3:.0f}",
                f"{cpu * 1e3:.0f}",
                f"{sent_bytes(at) / 1e6:.2f}",
                len(charts(at)),
            ]
        )
    at = open_page(page, model, timeout=600, text=text)
    for kind, wkey, values in VIEW_CHANGES[page]:
        for target in [None] if values is None else values[1:]:
            times = []
            for _ in range(repeats):
                if values is not None:
                    set_widget(at, kind, wkey, values[0])  # back to the first value, untimed
                times.append(timed(lambda target=target: set_widget(at, kind, wkey, target)))
            if at.exception:
                raise RuntimeError(f"{page} {wkey}: {at.exception}")
            wall, cpu = statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)
            rows.append(
                [
                    page,
                    f"change {wkey}" + ("" if values is None else f" {values[0]} -> {target}"),
                    "",
                    f"{wall * 1e3:.0f}",
                    f"{cpu * 1e3:.0f}",
                    f"{sent_bytes(at) / 1e6:.2f}",
                    len(charts(at)),
                ]
            )
    return rows


HEADERS = ["page", "view / change", "first load s", "run ms (median)", "run CPU ms", "MB sent", "charts"]


from model.checkpoints.serving import ENV as FOLDERS_ENV  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, nargs="*", default=[8, 32, 64, 128])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pages", nargs="*", default=list(VIEWS))
    parser.add_argument("--skip-demo", action="store_true", help="leave out the reverse demo at 20 tokens")
    parser.add_argument("--growth", action="store_true", help="also: the attention page against layers x heads")
    parser.add_argument(
        "--t5-base",
        action="store_true",
        help="a Hugging Face t5-base-shaped folder (223M parameters, no tokenizer: token ids) instead of the paper's base",
    )
    args = parser.parse_args()
    from model.checkpoints.demos import list_demos
    from ui.serving.threads import set_server_threads

    print(
        f"torch and numpy BLAS threads {set_server_threads()} (the server's setting, as `streamlit run app.py` has it); {load()}"
    )
    summary = []
    if not args.skip_demo and any(d.name == "reverse" for d in list_demos()):
        rows = [
            r for page in args.pages for r in measure_page("demo:reverse", "abcdefghijklmnopqrs", page, args.repeats)
        ]
        print(f"\nreverse demo, 20 source tokens; {load()}")
        print(table(HEADERS, rows))
        worst = max(float(r[4]) for r in rows if not r[1].startswith("change"))
        summary.append(target_row("reverse/20: slowest page run after first load (CPU)", worst, 100, "ms"))
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[FOLDERS_ENV] = tmp  # the server may open this folder (server folders are off by default)
        if args.t5_base:  # issue 25: an imported T5 folder (relative bias, RMS norms, no tokenizer files)
            from benchmarks.bench_load_hf import t5_folder

            path, what = Path(tmp) / "t5-base", "t5-base shape (768/12/3072, 12+12 layers, vocabulary 32128)"
            t5_folder(path, 768, 12, 3072, 12)
            text_of = lambda n: " ".join(str(5 + (i * 37) % 32000) for i in range(n - 1))  # noqa: E731  (ids)
        else:
            path, what, text_of = (
                base_checkpoint(Path(tmp)),
                "base model (512/8/2048, 6+6 layers, vocabulary 8000)",
                words,
            )
        growth = []
        for n in args.tokens:
            rows = [r for page in args.pages for r in measure_page(f"path:{path}", text_of(n), page, args.repeats)]
            print(f"\n{what}, {n} source tokens; {load()}")
            print(table(HEADERS, rows))
            runs = [r for r in rows if not r[1].startswith("change")]
            att = [r for r in runs if r[0] == "attention"]
            growth.append([n, *(r[4] for r in att), *(r[5] for r in att)])
            if n == 128:
                worst = max(float(r[4]) for r in runs)
                change = max(float(r[4]) for r in rows if r[1].startswith("change"))
                att_mb = max(float(r[5]) for r in att if r[1] == "one")
                att_views_mb = max(float(r[5]) for r in att)
                summary += [
                    target_row("base/128: slowest page run after first load (CPU)", worst, 1000, "ms"),
                    target_row("base/128: slowest view-only change (CPU)", change, 150, "ms"),
                    target_row("base/128: attention page sent, default view", att_mb, 3, "MB", 2),
                    target_row(
                        "base/128: attention page sent, largest view (any view, bertviz included)",
                        att_views_mb,
                        3,
                        "MB",
                        2,
                    ),
                ]
        if "attention" in args.pages:
            views = [view_name(v) for v in VIEWS["attention"]]
            print(f"\nGrowth against source tokens: attention page run (CPU ms) and MB sent per view; {load()}")
            print(table(["tokens", *(f"{v} CPU ms" for v in views), *(f"{v} MB" for v in views)], growth))
        if args.growth:
            rows = []
            for layers, heads in ((2, 4), (4, 8), (6, 8), (6, 16)):
                p = base_checkpoint(Path(tmp), layers, heads)
                at = open_page("attention", f"path:{p}", timeout=600, text=words(64), att_view="overview")
                runs = [timed(lambda: at.run()) for _ in range(args.repeats)]
                wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
                rows.append(
                    [
                        f"{layers} x {heads}",
                        layers * heads,
                        f"{wall * 1e3:.0f}",
                        f"{cpu * 1e3:.0f}",
                        f"{sent_bytes(at) / 1e6:.2f}",
                    ]
                )
            print(f"\nGrowth against layers x heads: the all-layers overview at 64 tokens; {load()}")
            print(table(["layers x heads", "maps", "run ms", "run CPU ms", "MB sent"], rows))
    if summary:
        print(f"\nTargets; {load()}")
        print(table(["target", "measured", "bound", "met"], summary))


if __name__ == "__main__":
    main()
