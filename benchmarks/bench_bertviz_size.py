"""HTML size of the bertviz views: stock bertviz vs viz.bertviz_view, paper base shape (6 layers, 8 heads).

    python -m benchmarks.bench_bertviz_size                  # 16, 64 and 128 tokens on each side
    python -m benchmarks.bench_bertviz_size --spread 3       # more peaked attention (more weights round to 0)

Target (issue): the page for 128 tokens at most a quarter of stock bertviz's size.
Attention is random softmax from numpy (logits ~ N(0, spread), decoder self-attention causal); with
spread 1 it is close to uniform, the least compressible case. Columns:
  stock             bertviz's head_view / model_view(..., html_action='return').data
  stock, once       the same with the weights counted once: stock also writes them into a comment
  ours              viz.bertviz_view with the defaults (3 decimals, d3 and jQuery inlined)
  ours, no libs     ours with offline=False (same weights, require.js from the CDN): the inlined
                    libraries are the fixed cost ours - ours, no libs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import table  # noqa: E402
from harness.random_attention import random_attention as attention_maps  # noqa: E402
from harness.random_attention import stock_bertviz_html as stock_html  # noqa: E402
from viz.bertviz_view import head_view_html, model_view_html  # noqa: E402

LAYERS, HEADS = 6, 8  # the paper's base model


def random_attention(n: int, spread: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """float32 (encoder_self, decoder_self, cross), each (LAYERS, HEADS, n, n); decoder_self causal."""
    return attention_maps(LAYERS, LAYERS, HEADS, n, n, seed, spread)


def params_chars(html: str) -> int:
    """Characters of the params JSON after 'const params = '."""
    start = html.index("const params = ") + len("const params = ")
    _, end = json.JSONDecoder().raw_decode(html, start)
    return end - start


def size(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, nargs="+", default=[16, 64, 128], help="tokens on each side")
    parser.add_argument("--spread", type=float, default=1.0, help="std of the random attention logits")
    args = parser.parse_args()

    rows = []
    for n in args.tokens:
        arrays = random_attention(n, args.spread)
        tokens = [f"tok{i}" for i in range(n)]
        for view, ours_fn in (("head", head_view_html), ("model", model_view_html)):
            page = stock_html(view, arrays, tokens)
            stock = len(page.encode())
            # stock fills PYTHON_PARAMS twice: in the code and in the comment after it (the JSON is ASCII)
            stock_once = stock - params_chars(page) + len("PYTHON_PARAMS")
            del page
            ours = len(ours_fn(*arrays, tokens, tokens).encode())
            no_libs = len(ours_fn(*arrays, tokens, tokens, offline=False).encode())
            rows.append(
                [
                    n,
                    view,
                    size(stock),
                    size(stock_once),
                    size(ours),
                    size(no_libs),
                    f"{ours / stock:.3f}",
                    f"{ours / stock_once:.3f}",
                ]
            )
    print(
        f"bertviz HTML size, {LAYERS} layers x {HEADS} heads, random softmax attention (spread {args.spread}), "
        "source and target of the same length\n"
    )
    print(
        table(
            ["tokens", "view", "stock", "stock, once", "ours", "ours, no libs", "ours/stock", "ours/stock once"], rows
        )
    )


if __name__ == "__main__":
    main()
