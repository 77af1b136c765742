"""Real sizes of the decoder-only families (issue 32): capture of 128 tokens against transformers' own forward.

    python -m benchmarks.bench_load_one_stack            # gpt2-small and qwen2-0.5b shapes
    python -m benchmarks.bench_load_one_stack --quick    # gpt2-small shape only

The folders (random weights, built with transformers) are those of benchmarks/bench_load_hf.py, cached under its
--folders. Per folder, side by side in this process (one untimed call of each, then the calls alternated, the median
of the repeats, with the load average):
  capture   capture(model, tok, text) of 128 tokens (every attention map and the log-probs) against transformers'
            forward with output_attentions=True, eager attention (target: <= 1.2x)
  load      load_checkpoint(folder) against from_pretrained(folder); bench_load_hf.py has every family with the
            peak memory while loading
The date and the load average (uptime) are printed at the start and the end.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_load_hf import DEFAULT_FOLDERS, SHAPES, alternate, folder_for, hf_class, uptime  # noqa: E402
from benchmarks.common import table  # noqa: E402

FAMILIES = ("gpt2", "qwen2")
TEXT_TOKENS = 128


def text_of(tok, n: int) -> str:
    """Numbers written out until the text is n tokens (the small tokenizer: about 2 tokens a number), or just fewer."""
    words: list[str] = []
    for i in range(10 * n):
        if len(tok.source.encode(" ".join([*words, str(i)]))) > n:
            break
        words.append(str(i))
    text = " ".join(words)
    return next((text + d for d in "0123456789" if len(tok.source.encode(text + d)) == n), text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--folders", type=Path, default=DEFAULT_FOLDERS, help="where the built folders are cached")
    args = parser.parse_args()
    import torch

    from model import capture, load_checkpoint

    start = f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {uptime()}"
    print(f"start: {start}", flush=True)
    rows = []
    for family in FAMILIES[:1] if args.quick else FAMILIES:
        folder = folder_for(family, False, args.folders)
        cls = hf_class(folder)
        loads = alternate(
            {
                "theirs": lambda: cls.from_pretrained(str(folder), attn_implementation="eager"),
                "ours": lambda: load_checkpoint(folder),
            },
            args.repeats,
        )
        model, tok = load_checkpoint(folder)
        hf = cls.from_pretrained(str(folder), attn_implementation="eager").eval()
        text = text_of(tok, TEXT_TOKENS)
        batch = torch.tensor([tok.source.encode(text)])

        def theirs_capture(hf=hf, batch=batch):
            with torch.no_grad():
                return hf(batch, output_attentions=True)

        caps = alternate(
            {"theirs": theirs_capture, "ours": lambda: capture(model, tok, text)},
            args.repeats,
        )
        rows.append([SHAPES[family][0], f"{sum(p.numel() for p in hf.parameters()) / 1e6:.0f}M", str(len(batch[0])),
                     f"{caps['theirs'] * 1000:.0f}", f"{caps['ours'] * 1000:.0f}",
                     f"{caps['ours'] / caps['theirs']:.2f}x", f"{loads['theirs'] * 1000:.0f}",
                     f"{loads['ours'] * 1000:.0f}", f"{loads['ours'] / loads['theirs']:.2f}x",
                     f"{os.getloadavg()[0]:.1f}"])  # fmt: skip
        print(" | ".join(rows[-1]), flush=True)
    print(f"end: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {uptime()}")
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads; median of "
          f"{args.repeats}, calls alternated in one process")  # fmt: skip
    headers = ["folder", "parameters", "tokens", "HF forward ms", "capture ms", "capture ratio",
               "from_pretrained ms", "load_checkpoint ms", "load ratio", "load avg"]  # fmt: skip
    print(table(headers, rows, title=f"Capture against transformers' eager forward ({start})"))
    print("targets: capture ratio <= 1.2x, load ratio <= 1.0x")


if __name__ == "__main__":
    main()
