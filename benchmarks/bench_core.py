"""Core engine speed: cached vs uncached greedy decoding, and recorded vs fused forward passes.

    python -m benchmarks.bench_core            # paper base model, vocabulary 8000 (a few minutes)
    python -m benchmarks.bench_core --quick    # fewer steps, for a smoke run

Targets (issue 2): cached decoding at least 4x faster than use_cache=False at 256 steps; a forward
pass with full capture at most 1.3x slower than the unrecorded fused path (128 tokens).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import best_of, median_of, table  # noqa: E402
from model import Tokenizer, TransformerConfig, Vocab, build_model, capture, greedy_decode  # noqa: E402
from model.inputs import prepare_source  # noqa: E402


def memory_bandwidth_gbs(megabytes: int = 512) -> float:
    """Measured copy bandwidth (bytes read + bytes written per second), best of 5."""
    src = torch.ones(megabytes * 2**20 // 4)
    dst = torch.empty_like(src)
    seconds = best_of(lambda: dst.copy_(src), repeats=5)
    return 2 * src.numel() * 4 / seconds / 1e9


def weight_bytes(module: torch.nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in module.parameters())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="32 and 64 steps only")
    args = parser.parse_args()
    torch.manual_seed(0)
    vocab = Vocab.build([f"w{i}" for i in range(8000 - 4)], level="word")
    tokenizer = Tokenizer(vocab, vocab)
    config = TransformerConfig.preset("base", src_vocab_size=8000, tgt_vocab_size=8000, max_len=512)
    model = build_model(config, seed=0)
    source = " ".join(f"w{i * 37 % 7996}" for i in range(31))  # 31 words + </s> = 32 source tokens
    assert len(prepare_source(model, tokenizer, source).ids) == 32

    bandwidth = memory_bandwidth_gbs()
    all_bytes = weight_bytes(model)
    step_bytes = weight_bytes(model.decoder) + weight_bytes(model.generator)  # what one cached step reads
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; measured copy bandwidth {bandwidth:.1f} GB/s")
    print(f"weights: all {all_bytes / 1e6:.0f} MB; decoder + generator {step_bytes / 1e6:.0f} MB")
    print()

    rows = []
    for steps in (32, 64) if args.quick else (32, 64, 128, 256):
        run = lambda cache: greedy_decode(model, tokenizer, source, max_len=steps, use_cache=cache, stop_at_eos=False)  # noqa: E731
        cached = best_of(lambda: run(True), repeats=3 if steps <= 128 else 2)
        uncached = best_of(lambda: run(False), repeats=2 if steps <= 128 else 1, warmup=0 if steps > 64 else 1)
        rows.append([
            steps, f"{cached:.2f}", f"{uncached:.2f}", f"{uncached / cached:.1f}x",
            f"{cached / steps * 1e3:.1f}", f"{step_bytes / bandwidth / 1e6:.1f}", f"{all_bytes / bandwidth / 1e6:.1f}",
        ])
    print("Greedy decoding, paper base model (512/8/2048/6+6), vocabulary 8000, source 32 tokens")
    print(table(["steps", "cached s", "use_cache=False s", "speed-up", "cached ms/token",
                 "bound ms/token (decoder+generator)", "bound ms/token (all weights)"], rows))
    print()

    words = " ".join(f"w{i * 13 % 7996}" for i in range(127))  # 128 tokens on each side
    src = torch.tensor([prepare_source(model, tokenizer, words).ids])
    tgt = torch.tensor([[1] + vocab.encode(words)])

    def fused():
        with torch.no_grad():
            model(src, tgt)

    fused_s = median_of(fused, repeats=7)
    capture_s = median_of(lambda: capture(model, tokenizer, words, target=words), repeats=7)
    print("Forward pass, base model, 128 source and 128 target tokens")
    print(table(["path", "median ms", "ratio"], [
        ["fused scaled_dot_product_attention, nothing recorded", f"{fused_s * 1e3:.1f}", "1.00x"],
        ["capture(): explicit softmax, every map and PE row recorded", f"{capture_s * 1e3:.1f}", f"{capture_s / fused_s:.2f}x"],
    ]))


if __name__ == "__main__":
    main()
