"""Size of the lecture pack (one self-contained HTML file) for the shipped demo models.

    python -m benchmarks.bench_lecture_pack                 # every demo, 1, 2 and 5 of its card's examples
    python -m benchmarks.bench_lecture_pack --long          # also 5 inputs as long as the model reads (worst case)
    python -m benchmarks.bench_lecture_pack --counts 5 --demos reverse reverse_rope   # some demos only

Target (issue 12): at most 10 MB for 5 inputs on a demo model; since issue 27 the pack also carries the model
(so that the page runs typed inputs), budget 15 MB; since issue 33 the model is its own ONNX graphs, run by the
inlined onnxruntime-web (4.9 MB), and its tokenizer.json, read by tokenizers.js: budget 20 MB. Baseline: plotly.js
alone, the fixed cost every pack carries once. Columns:
  pack          the whole HTML file
  data          pack minus plotly.js: figures, attention and decoding numbers, the model, the page and its scripts
  model         of which the model: its two ONNX graphs as base64 (4/3 of their bytes) and its tokenizer
                (the runtimes, onnxruntime-web and tokenizers.js, are counted in data, not here)
  per input     (data - model) / inputs
  pack/target   pack / 20 MB
  run, html     seconds to run the model on the inputs (capture + greedy decoding) and to write the HTML
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plotly.offline import get_plotlyjs  # noqa: E402

from benchmarks.common import table  # noqa: E402
from model import load_checkpoint  # noqa: E402
from model.checkpoints.demos import list_demos  # noqa: E402
from pack.page import lecture_pack_html  # noqa: E402
from pack.records import pack_records  # noqa: E402

TARGET = 20e6


def mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.0f} kB"


def long_inputs(tokenizer, max_len: int, n: int) -> list[str]:
    """n inputs of as many tokens as the model reads, made of its own source symbols (no specials)."""
    symbols = [t for t in tokenizer.source.tokens if not (t.startswith("<") and t.endswith(">")) and t.strip()]
    sep = "" if getattr(tokenizer.source, "level", "word") == "char" else " "
    return [sep.join(symbols[(i + k) % len(symbols)] for k in range(max_len - 1)) for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 2, 5], help="numbers of inputs")
    parser.add_argument("--long", action="store_true", help="also 5 inputs of max_len - 1 tokens per demo")
    parser.add_argument("--demos", nargs="*", default=None, help="demo names (default: every shipped demo)")
    args = parser.parse_args()
    plotly_js = len(get_plotlyjs().encode())
    rows = []
    for demo in [d for d in list_demos() if args.demos is None or d.name in args.demos]:
        model, tok = load_checkpoint(demo.path)
        cases = [(f"{n} examples", [demo.examples[i % len(demo.examples)] for i in range(n)]) for n in args.counts]
        if args.long:
            cases.append(("5 long", long_inputs(tok, model.config.max_len, 5)))
        for name, texts in cases:
            t0 = time.perf_counter()
            records = pack_records(model, tok, texts, demo.name)
            t1 = time.perf_counter()
            size = len(lecture_pack_html(records).encode())
            t2 = time.perf_counter()
            model_size = len(json.dumps(records.live, ensure_ascii=False).encode()) if records.live else 0
            tokens = max(len(i.capture.source_tokens) for i in records.inputs)
            rows.append(
                [
                    demo.name,
                    name,
                    tokens,
                    mb(size),
                    mb(size - plotly_js),
                    mb(model_size),
                    mb((size - plotly_js - model_size) / len(texts)),
                    f"{size / TARGET:.2f}",
                    f"{t1 - t0:.1f} s",
                    f"{t2 - t1:.1f} s",
                    f"{os.getloadavg()[0]:.1f}",
                ]
            )
    print(f"Lecture pack size; baseline plotly.js alone: {mb(plotly_js)}; target {mb(TARGET)} for 5 inputs")
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"{when}, {os.cpu_count()} CPUs, load average {'/'.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print(
        table(
            [
                "demo",
                "inputs",
                "longest source",
                "pack",
                "data",
                "model",
                "per input",
                "pack/target",
                "run",
                "html",
                "load avg",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
