"""The lecture pack's in-page model: from Enter to the output and every chart drawn, in headless Chromium.

    python -m benchmarks.bench_pack                     # every demo, 3 inputs each, 3 runs per input
    python -m benchmarks.bench_pack --demos reverse fr_en --runs 5
    python -m benchmarks.bench_pack --longest           # each demo's longest trained input instead (card input_tokens.max)
    python -m benchmarks.bench_pack --demos --real-size --runs 1   # the opus-mt-en-de shape alone (issue 33)

--real-size adds a row for this project's model in the shape of Helsinki-NLP/opus-mt-en-de (73.9M parameters,
random weights built here, vocabulary 58,101 shared and tied; benchmarks/bench_pack_real_size.OPUS_MT with this
project's word vocabulary of as many synthetic words): a folder pack (index.html and its float16 weights beside it,
pack.export.folder_pack), into which 20-word sentences of its words are typed. Its random weights
rarely write </s>: it decodes to the step limit (source length + 50 steps), more than a trained model would for the
same sentence; the steps column says how many, and ms per step is page model / steps.

Each demo's default pack (its card's examples, as scripts/lecture_pack.py writes it) is opened from file:// with
every other request blocked; after its own charts are drawn and the page has run its first example itself (so the
typed input's charts exist and are redrawn, as for a student's second input), inputs are typed and Enter pressed.
Target (issues 27, 33): Enter -> output and charts drawn <= 200 ms for the demos on a laptop-class CPU, the first
input after opening included.
Columns:
  pack MB         the whole file (the model's ONNX graphs, onnxruntime-web, plotly.js, the precomputed inputs);
                  budget 20 MB; a folder pack: index.html and the weight files beside it, together
  open ms         navigation to the pack's own charts drawn (onnxruntime-web and the graphs load meanwhile)
  ready ms        navigation to the page's model ready (runtime started, every graph's session made; the page's
                  own clock): a first input typed before then waits for it
  steps           decoder steps of the typed inputs (median)
  first input ms  the first input, typed as soon as the page is open: Enter to its output and charts on screen, and
                  to every chart of it drawn (the page may still be drawing its own example's charts then)
  at load ms      the first input typed as soon as the box is there (the page parsed, its own charts not drawn, the
                  runtime maybe still starting): Enter to its output and charts on screen, its wait for the runtime
                  included
  page model      ms from Enter to the numbers (tokenize, encode, greedy decoding, the teacher-forced pass), later
                  inputs (median)
  page on screen  ms from Enter to the output and the typed input's charts on screen drawn (median; max after /);
                  the others are redrawn as they come on screen (Plotly.react), each in tens of ms
  page all charts the same until every chart of the typed input is drawn (as if the student scrolled through all)
  server model    ms the Python model takes for the same input (model.capture + model.greedy_decode, median)
  server figures  ms the Python side takes to build the same figures and write them (a one-input pack's HTML)
  drawn/server    page on screen / (server model + server figures): the baseline is the server's own work for
                  that input, before any network or browser drawing
Every "ms from Enter" starts at the key press (the keydown event's own time): a page still busy when Enter came (drawing,
decoding its weights) counts that wait too.
The load average (1/5/15 min) is printed: on a shared machine every figure is slower than on an idle laptop.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import table  # noqa: E402
from harness.browser import VIEWPORT, chromium  # noqa: E402
from model import capture, greedy_decode, load_checkpoint  # noqa: E402
from model.analysis.budget import WorkBudget  # noqa: E402
from model.checkpoints.checkpoint import load_card  # noqa: E402
from model.checkpoints.demos import list_demos  # noqa: E402
from pack.page import lecture_pack_files, lecture_pack_html  # noqa: E402
from pack.records import bounded_inputs, pack_records  # noqa: E402
from pack.weights import half_rounded  # noqa: E402


def inputs_for(card: dict, tok) -> list[str]:
    """Three inputs of the demo's own kind: its card's examples, each changed a little (so none is precomputed)."""
    examples = list(card.get("examples") or ["abc"])
    out = []
    for i in range(3):
        text = examples[i % len(examples)]
        out.append(text[::-1] if tok.source.level == "char" and i else text if not i else " ".join(text.split()[::-1]))
    return out


def longest_input(card: dict, tok) -> list[str]:
    """One input as long as the demo was trained on (its card's input_tokens.max), cycling through its symbols."""
    symbols = [t for t in tok.source.tokens if not (t.startswith("<") and t.endswith(">")) and t.strip()]
    n = (card.get("input_tokens") or {}).get("max", 24)
    return [("" if tok.source.level == "char" else " ").join(symbols[(7 * k) % len(symbols)] for k in range(n))]


def _context(browser, path: Path):
    """A browser context in which the pack at `path` and the files beside it load, every other request blocked."""
    folder = path.parent.as_uri() + "/"
    context = browser.new_context(viewport=VIEWPORT)
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(folder) else r.abort())
    return context


# ms from now to every chart of the typed input drawn (those not on screen are drawn when they come on screen)
FLUSH = (
    "(() => { const t0 = performance.now(); return PackViews.flush(document.getElementById('live-views'))"
    ".then(() => performance.now() - t0); })()"
)


def page_times(browser, path: Path, texts: list[str], runs: int):
    """(ms to open, ms to the model ready, ms of the first typed input, then per later input: ms to the numbers, ms to
    the output and the charts on screen, ms to every chart, decoder steps), `runs` times each; the box at the top of
    the screen, as a student sees it.

    Open: from navigation to the pack's own charts drawn (the runtime and the model's graphs load meanwhile). First
    input: typed as soon as the page is open, Enter to its output and charts (the runtime's start included when
    it is not done)."""
    url = path.as_uri()
    context = _context(browser, path)
    page = context.new_page()
    t0 = time.perf_counter()
    page.goto(url, wait_until="load", timeout=600_000)
    page.wait_for_function("document.body.dataset.drawn !== undefined", timeout=600_000)
    open_ms = 1000 * (time.perf_counter() - t0)
    # the box's script has run (its Enter handler is there)
    page.wait_for_function("document.getElementById('live').dataset.ready === '1'", timeout=600_000, polling=50)
    steps = []
    box, model_ms, drawn_ms, all_ms, n = page.locator('[data-testid="pack-input"]'), [], [], [], 1
    box.fill(texts[0])
    box.press("Enter")
    page.wait_for_function("document.getElementById('live').dataset.drawn === '1'", timeout=600_000)
    first_ms = float(page.evaluate("document.getElementById('live').dataset.ms"))
    first_all = first_ms + page.evaluate(FLUSH)
    page.wait_for_function("document.getElementById('live').dataset.modelReady !== undefined", timeout=600_000)
    ready_ms = float(page.evaluate("document.getElementById('live').dataset.modelReady"))  # the page's own clock
    page.wait_for_function("document.getElementById('live').dataset.warm !== undefined", timeout=600_000)
    for _ in range(runs):
        for text in texts:
            n += 1
            box.fill(text)
            box.press("Enter")
            page.wait_for_function(
                "n => document.getElementById('live').dataset.drawn === String(n)", arg=n, timeout=600_000
            )
            data = page.evaluate("({...document.getElementById('live').dataset})")
            steps.append(int(data["steps"]))
            rest = page.evaluate(FLUSH)
            model_ms.append(float(data["modelMs"]))
            drawn_ms.append(float(data["ms"]))
            all_ms.append(float(data["ms"]) + rest)
    context.close()
    return open_ms, ready_ms, (first_ms, first_all), model_ms, drawn_ms, all_ms, steps


def at_load_ms(browser, path: Path, text: str) -> float:
    """ms from Enter to the output and charts on screen of an input typed as soon as the page is parsed."""
    context = _context(browser, path)
    page = context.new_page()
    page.goto(path.as_uri(), wait_until="domcontentloaded", timeout=600_000)
    box = page.locator('[data-testid="pack-input"]')
    box.fill(text)
    box.press("Enter")
    page.wait_for_function("document.getElementById('live').dataset.drawn === '1'", timeout=600_000)
    ms = float(page.evaluate("document.getElementById('live').dataset.ms"))
    context.close()
    return ms


def server_times(model, tok, texts: list[str], runs: int) -> tuple[list[float], list[float]]:
    """(ms of capture + greedy_decode, ms of the figures and HTML of a one-input pack) of each input, `runs` times."""
    model_ms, figure_ms = [], []
    for _ in range(runs):
        for text in texts:
            t0 = time.perf_counter()
            capture(model, tok, text)
            greedy_decode(model, tok, text)
            model_ms.append(1000 * (time.perf_counter() - t0))
            records = pack_records(model, tok, [text], live=False)
            t0 = time.perf_counter()
            lecture_pack_html(records)
            figure_ms.append(1000 * (time.perf_counter() - t0))
    return model_ms, figure_ms


def real_size(seed: int = 0):
    """(model, tokenizer, the pack's own input, three typed 20-word sentences): the opus-mt-en-de shape with this
    project's word vocabulary of 58,101 entries (its 4 special tokens and synthetic words), random weights."""
    from benchmarks.bench_pack_real_size import OPUS_MT
    from model import TransformerConfig, build_model
    from model.text.tokenizer import Tokenizer, Vocab

    words = [f"w{i:05d}" for i in range(OPUS_MT["src_vocab_size"] - 4)]
    vocab = Vocab.build(words, "word")
    ids = dict(pad_id=vocab.pad_id, bos_id=vocab.bos_id, eos_id=vocab.eos_id)
    model = build_model(TransformerConfig(**{**OPUS_MT, **ids}), seed=seed)
    rng = random.Random(seed)
    sentence = lambda: " ".join(rng.choice(words) for _ in range(20))  # noqa: E731
    return model, Tokenizer(vocab, vocab), sentence(), [sentence() for _ in range(3)]


def pack_size(path: Path) -> int:
    """Bytes of the pack: the file, or index.html and the weight files beside it."""
    return path.stat().st_size + sum(p.stat().st_size for p in path.parent.glob("weights-*.js"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demos", nargs="*", default=None, help="demo names (default: every shipped demo)")
    parser.add_argument("--runs", type=int, default=3, help="times each input is typed")
    parser.add_argument("--longest", action="store_true", help="type the longest trained input instead")
    parser.add_argument("--real-size", action="store_true", help="add the opus-mt-en-de shape's folder pack")
    args = parser.parse_args(argv)
    from ui.serving.threads import (
        set_server_threads,  # the server's torch threads (one), for its side of the comparison
    )

    set_server_threads()
    demos = [d for d in list_demos() if args.demos is None or d.name in args.demos]
    cases = [(d.name, lambda d=d: (*load_checkpoint(d.path), load_card(d.path))) for d in demos]
    if args.real_size:
        cases.append(("opus-mt-en-de shape", None))
    rows, med = [], statistics.median
    with chromium() as browser, tempfile.TemporaryDirectory() as tmp:
        for name, load in cases:
            folder = Path(tmp) / name.replace(" ", "-")
            folder.mkdir()
            if load is None:
                model, tok, first, typed = real_size()
                model = half_rounded(model)  # what the folder pack runs (pack_records rounds it too)
                budget = WorkBudget(64 * 2**30, 10**15)  # a lecturer's own machine, not a shared server's request
                records = pack_records(model, tok, [first], label=name, folder=True, budget=budget)
            else:
                model, tok, card = load()
                texts, _ = bounded_inputs(card.get("examples") or ["abc"])
                records = pack_records(model, tok, texts, label=name)
                typed = longest_input(card, tok) if args.longest else inputs_for(card, tok)
            for file, data in lecture_pack_files(records).items():
                (folder / file).write_bytes(data)
            path = folder / "index.html"
            del records
            open_ms, ready_ms, first_ms, page_model, page_drawn, page_all, steps = page_times(
                browser, path, typed, args.runs
            )
            load_ms = at_load_ms(browser, path, typed[0])
            srv_model, srv_figs = server_times(model, tok, typed, args.runs)
            server = med(srv_model) + med(srv_figs)
            rows.append([
                name, f"{pack_size(path) / 1e6:.1f}", f"{open_ms:.0f}", f"{ready_ms:.0f}", f"{first_ms[0]:.0f} / {first_ms[1]:.0f}", f"{load_ms:.0f}",
                f"{med(steps):.0f}", f"{med(page_model):.0f}", f"{med(page_drawn):.0f} / {max(page_drawn):.0f}",
                f"{med(page_all):.0f} / {max(page_all):.0f}", f"{med(srv_model):.0f}", f"{med(srv_figs):.0f}",
                f"{med(page_drawn) / server:.2f}x",
            ])  # fmt: skip
            print(f"{name}: done", file=sys.stderr, flush=True)
    print(f"Enter -> output and charts drawn in the pack (headless Chromium), {len(typed)} inputs x {args.runs} runs")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, load average "
          f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
    headers = ["pack", "pack MB", "open ms", "ready ms", "first input ms (on screen / all charts)", "at load ms", "steps", "page model ms",
               "page on screen ms (med / max)", "page all charts ms", "server model ms", "server figures ms",
               "drawn/server"]  # fmt: skip
    print(table(headers, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
