"""Real sizes of the decoder-only families (issue 32): a GPT-2-small-shaped folder (124M) and a Qwen2-0.5B-shaped
folder (494M), random weights built here with transformers, opened by this app and by transformers.

    python -m benchmarks.bench_load_one_stack            # gpt2-small and qwen2-0.5b shapes
    python -m benchmarks.bench_load_one_stack --quick    # gpt2-small shape only

Per folder, side by side in this process (calls alternated, median of the repeats, with the load average):
  load      load_checkpoint(folder) against transformers' from_pretrained(folder) (targets: <= 1.0x)
  capture   capture(model, tok, text) of 128 tokens (every attention map and the log-probs) against transformers'
            forward with output_attentions=True, eager attention (target: <= 1.2x)
and, each in a fresh child process (a peak cannot be told apart inside one process), the peak resident memory
while loading, against the size of the weights file (target: <= 1.2x).
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import table  # noqa: E402

SHAPES = {
    "gpt2-small": ("gpt2", dict(n_embd=768, n_layer=12, n_head=12, n_positions=1024, vocab_size=50257)),
    "qwen2-0.5b": (
        "qwen2",
        dict(
            hidden_size=896,
            intermediate_size=4864,
            num_hidden_layers=24,
            num_attention_heads=14,
            num_key_value_heads=2,
            vocab_size=151936,
            max_position_embeddings=32768,
            tie_word_embeddings=True,
        ),
    ),  # fmt: skip
}
TEXT_TOKENS = 128


def build(folder: Path, family: str, shape: dict) -> None:
    import torch
    import transformers

    from harness.byte_level import byte_level

    folder.mkdir()
    byte_level(folder, ["<|endoftext|>"])  # a small tokenizer: ids beyond its 300 are typed as ids below
    torch.manual_seed(0)
    if family == "gpt2":
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**shape))
    else:
        model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**shape))
    model.save_pretrained(str(folder))


def hf_class(family: str):
    import transformers

    return transformers.GPT2LMHeadModel if family == "gpt2" else transformers.Qwen2ForCausalLM


def peak_rss_mb(code: str) -> float:
    """How far the resident memory of a fresh child process rose above its level before `code` (MB): the child
    imports what both sides need, resets its peak (Linux: /proc/self/clear_refs), runs `code`, reads VmHWM."""
    root = str(Path(__file__).resolve().parents[1])
    script = f"""import sys; sys.path.insert(0, {root!r}); import torch, transformers, model.checkpoints.loading
def status(field):
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(field))
open("/proc/self/clear_refs", "w").write("5")
before = status("VmRSS:")
{code}
print((status("VmHWM:") - before) / 1024)
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return float(run.stdout.split()[-1])


def alternate(a, b, repeats: int) -> tuple[float, float]:
    ta, tb = [], []
    for _ in range(repeats):
        for f, out in ((a, ta), (b, tb)):
            start = time.perf_counter()
            f()
            out.append(time.perf_counter() - start)
    return statistics.median(ta), statistics.median(tb)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import torch

    from model import capture, load_checkpoint

    names = ["gpt2-small"] if args.quick else list(SHAPES)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-one-stack-") as tmp:
        for name in names:
            family, shape = SHAPES[name]
            folder = Path(tmp) / name
            build(folder, family, shape)
            size = (folder / "model.safetensors").stat().st_size
            cls = hf_class(family)
            load_checkpoint(folder)  # once untimed: both read from the page cache
            ours_load = lambda: load_checkpoint(folder)  # noqa: E731
            theirs_load = lambda: cls.from_pretrained(str(folder), attn_implementation="eager")  # noqa: E731
            t_load, o_load = alternate(theirs_load, ours_load, args.repeats)
            model, tok = load_checkpoint(folder)
            hf = theirs_load().eval()
            text = " ".join(str(i) for i in range(TEXT_TOKENS))  # the tiny tokenizer: about 2 tokens a number
            ids = tok.source.encode(text)[:TEXT_TOKENS]
            text = tok.source.detokenize(tok.source.decode(ids))
            batch = torch.tensor([tok.source.encode(text)])

            def theirs_capture():
                with torch.no_grad():
                    return hf(batch, output_attentions=True)

            t_cap, o_cap = alternate(theirs_capture, lambda: capture(model, tok, text), args.repeats)
            ours_peak = peak_rss_mb(f"model.checkpoints.loading.load_checkpoint({str(folder)!r})")
            theirs_peak = peak_rss_mb(f"transformers.{cls.__name__}.from_pretrained({str(folder)!r})")
            load = os.getloadavg()[0]
            rows.append([name, f"{sum(p.numel() for p in hf.parameters()) / 1e6:.0f}M", f"{size / 1e6:.0f} MB",
                         f"{t_load * 1000:.0f}", f"{o_load * 1000:.0f}", f"{o_load / t_load:.2f}x",
                         f"{t_cap * 1000:.0f}", f"{o_cap * 1000:.0f}", f"{o_cap / t_cap:.2f}x",
                         f"{theirs_peak:.0f}", f"{ours_peak:.0f}", f"{ours_peak * 2**20 / size:.2f}x",
                         f"{load:.1f}"])  # fmt: skip
    print(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, torch {torch.__version__}, {os.cpu_count()} CPUs, "
          f"{torch.get_num_threads()} torch threads; median of {args.repeats}, calls alternated; capture of "
          f"{len(batch[0])} tokens")  # fmt: skip
    headers = ["folder", "parameters", "weights", "from_pretrained ms", "load_checkpoint ms", "load ratio",
               "HF forward ms", "capture ms", "capture ratio", "HF peak MB", "our peak MB", "our peak / weights",
               "load avg"]  # fmt: skip
    print(table(headers, rows))
    print("targets: load ratio <= 1.0x, capture ratio <= 1.2x, our peak / weights <= 1.2x")


if __name__ == "__main__":
    main()
