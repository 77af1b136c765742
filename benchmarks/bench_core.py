"""Core engine speed: cached vs prefix-recomputing greedy decoding, and recorded vs fused forward passes.

    python -m benchmarks.bench_core            # paper base model, vocabulary 8000, 256 steps (several minutes)
    python -m benchmarks.bench_core --quick    # 32 and 64 steps, for a smoke run

Targets: greedy decoding with the key/value cache at least 6x faster than recomputing the prefix each
step (the reference implementations' way: the Annotated Transformer's greedy_decode, run here on
harness/reference/annotated.py's model of the same size) at 256 steps, side by side in one process, with
the ms per token beside the bound of reading the weights once per token at the copy bandwidth measured in the same
run (issue 11, target 5), and their ratio (about 1x: decoding is bound by reading the weights); a
forward pass with full capture at most 1.3x slower than the unrecorded fused path (128 tokens).
Every figure has the 1-minute load average beside it (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import best_of, median_of, table  # noqa: E402
from harness.reference.annotated import ann_make_model  # noqa: E402
from model import (  # noqa: E402
    Tokenizer,
    TransformerConfig,
    Vocab,
    build_model,
    capture,
    greedy_decode,
)
from model.decoding import greedy_ids  # noqa: E402
from model.text.inputs import prepare_source  # noqa: E402


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


@torch.no_grad()
def annotated_greedy_decode(model, src: torch.Tensor, steps: int, start_symbol: int) -> torch.Tensor:
    """The Annotated Transformer's greedy_decode: the whole prefix through the decoder at every step."""
    src_mask = torch.ones(1, 1, src.size(1), dtype=torch.bool)
    memory = model.encoder(model.src_embed(src), src_mask)
    ys = torch.full((1, 1), start_symbol, dtype=torch.long)
    for _ in range(steps):
        tgt_mask = torch.ones(1, ys.size(1), ys.size(1), dtype=torch.bool).tril()
        out = model.decoder(model.tgt_embed(ys), memory, src_mask, tgt_mask)
        prob = model.generator(out[:, -1])
        next_word = int(prob.argmax(-1)[0])
        ys = torch.cat([ys, torch.full((1, 1), next_word, dtype=torch.long)], dim=1)
    return ys


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
    # what one cached step reads: the decoder and generator, less the cross-attention K and V
    # projections (applied to the source once, not per token)
    cross_kv = sum(
        weight_bytes(m) for layer in model.decoder.layers for m in (layer.cross_attn.k_proj, layer.cross_attn.v_proj)
    )
    step_bytes = weight_bytes(model.decoder) + weight_bytes(model.generator) - cross_kv
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; measured copy bandwidth {bandwidth:.1f} GB/s")
    print(
        f"weights: all {all_bytes / 1e6:.0f} MB; read per cached step (decoder + generator, less cross K/V) {step_bytes / 1e6:.0f} MB"
    )
    print()

    reference = ann_make_model(8000, 8000, N=6, d_model=512, d_ff=2048, h=8, max_len=config.max_len).eval()
    src = torch.tensor([prepare_source(model, tokenizer, source).ids])
    rows = []
    for steps in (32, 64) if args.quick else (256,):
        slow = steps > 64

        def timed(fn, repeats, slow=slow):
            seconds = best_of(fn, repeats=repeats, warmup=0 if slow else 1)
            return seconds, load()

        recorded, l1 = timed(lambda n=steps: greedy_decode(model, tokenizer, source, max_len=n, stop_at_eos=False), 2)
        plain, l2 = timed(lambda n=steps: greedy_ids(model, [src[0].tolist()], max_steps=n), 2)
        ours_uncached, l3 = timed(
            lambda n=steps: greedy_decode(model, tokenizer, source, max_len=n, use_cache=False, stop_at_eos=False), 1
        )
        annotated, l4 = timed(lambda n=steps: annotated_greedy_decode(reference, src, n, 1), 1)
        for name, seconds, load_avg in (
            ("cached, recording every step (greedy_decode)", recorded, l1),
            ("cached, nothing recorded (greedy_ids: capture, evaluate)", plain, l2),
            ("prefix recomputed, recording (greedy_decode use_cache=False)", ours_uncached, l3),
            ("prefix recomputed: the Annotated Transformer's greedy_decode", annotated, l4),
        ):
            rows.append(
                [
                    steps,
                    name,
                    f"{seconds:.2f}",
                    f"{annotated / seconds:.2f}x",
                    f"{seconds / steps * 1e3:.1f}",
                    f"{step_bytes / bandwidth / 1e6:.1f}",
                    f"{seconds / steps / (step_bytes / bandwidth / 1e9):.1f}x",
                    load_avg,
                ]
            )
    print("Greedy decoding, paper base model (512/8/2048/6+6), vocabulary 8000, source 32 tokens, best of runs")
    print(
        table(
            [
                "steps",
                "path",
                "seconds",
                "speed-up vs Annotated",
                "ms/token",
                "bound ms/token (weights read once)",
                "ms/token / bound",
                "load avg",
            ],
            rows,
        )
    )
    print()

    words = " ".join(f"w{i * 13 % 7996}" for i in range(127))  # 128 tokens on each side
    src = torch.tensor([prepare_source(model, tokenizer, words).ids])
    tgt = torch.tensor([[1] + vocab.encode(words)])

    def fused():
        with torch.no_grad():
            model(src, tgt)

    fused_s = median_of(fused, repeats=7)
    fused_load = load()
    capture_s = median_of(lambda: capture(model, tokenizer, words, target=words), repeats=7)
    capture_load = load()
    print("Forward pass, base model, 128 source and 128 target tokens")
    print(
        table(
            ["path", "median ms", "ratio", "load avg"],
            [
                ["fused scaled_dot_product_attention, nothing recorded", f"{fused_s * 1e3:.1f}", "1.00x", fused_load],
                [
                    "capture(): explicit softmax, every map and PE row recorded",
                    f"{capture_s * 1e3:.1f}",
                    f"{capture_s / fused_s:.2f}x",
                    capture_load,
                ],
            ],
        )
    )


if __name__ == "__main__":
    main()
