"""What today's positional kinds cost (issue 24): the six reverse demos that differ only in positions, side by side.

    python -m benchmarks.bench_positional_kinds               # 64 sources of 24 letters, median of 5
    python -m benchmarks.bench_positional_kinds --repeats 9

Per model, CPU seconds of this process (wall time on a shared machine mostly says how busy the neighbours are):
- forward: one teacher-forced pass of the batch (fused attention: the bias travels as attn_mask);
- recorded: the same pass while recording (the explicit softmax path, bias and rotated q, k recorded);
- greedy: cached greedy decoding of the batch (25 steps; RoPE rotates each new key once, the bias is rebuilt per step).
Each time is also given as a ratio to the sinusoidal model (the baseline), with the load average beside the table.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import table  # noqa: E402
from model import load_checkpoint, record  # noqa: E402
from model.decoding import greedy_ids, pad_batch  # noqa: E402
from tasks.evaluate import source_ids  # noqa: E402
from tasks.tasks import ALPHABET  # noqa: E402

MODELS = ("reverse", "reverse_learned", "reverse_nope", "reverse_rope", "reverse_alibi", "reverse_relative")
CHECKPOINTS = Path(__file__).resolve().parents[1] / "checkpoints"


def cpu_median(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args()
    torch.set_num_threads(1)
    rng = random.Random(0)
    texts = ["".join(rng.choice(ALPHABET) for _ in range(24)) for _ in range(args.batch)]
    rows, base = [], None
    for name in MODELS:
        if not (CHECKPOINTS / name).is_dir():
            continue
        model, tokenizer = load_checkpoint(CHECKPOINTS / name)
        src_ids = source_ids(model, tokenizer, texts)
        src = pad_batch(src_ids, model.config.pad_id)
        tgt = torch.cat([torch.full((len(texts), 1), model.config.bos_id), src[:, :-1]], dim=1)

        def forward(model=model, src=src, tgt=tgt):
            with torch.no_grad():
                model(src, tgt)

        def recorded(model=model, src=src, tgt=tgt):
            with torch.no_grad(), record(model):
                model(src, tgt)

        times = [cpu_median(fn, args.repeats) for fn in (forward, recorded)]
        times.append(cpu_median(lambda m=model, s=src_ids: greedy_ids(m, s, max_steps=25), args.repeats))
        base = base or times
        rows.append(
            [name, model.config.positional] + [f"{t * 1000:.0f} ms ({t / b:.2f}x)" for t, b in zip(times, base)]
        )
    print(f"{args.batch} sources of 24 letters, CPU time of one thread, median of {args.repeats}; "
          f"load average {os.getloadavg()[0]:.1f} (1 min)")  # fmt: skip
    print(table(["model", "positions", "forward", "recorded forward", "greedy, 25 steps"], rows))


if __name__ == "__main__":
    main()
