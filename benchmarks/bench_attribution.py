"""Time of each attribution method on the shipped demos, and the agreement table over fresh examples (issue 26).

    python -m benchmarks.bench_attribution                      # every demo, n = 10 fresh examples each
    python -m benchmarks.bench_attribution --demos reverse dates --n 20

Timings: model.attribute on the demo card's first example (the model's own output), CPU and wall seconds of this
process, the best of --repeats, and the ratio of CPU time against occlusion (one batched pass: the baseline).
Agreement: per demo, Spearman's rank correlation of each method (and each layer's raw cross-attention, heads
averaged) with occlusion, and the share of output tokens whose top source token is the gold one, averaged over
n fresh examples (model/analysis/attribution_agreement.py). The load average is printed beside each table.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import table  # noqa: E402
from model import load_checkpoint  # noqa: E402
from model.analysis.attribution import METHODS, attribute  # noqa: E402
from model.analysis.attribution_agreement import agreement_over  # noqa: E402
from model.checkpoints.demos import list_demos  # noqa: E402
from tasks.intervened import UnknownTraining, fresh_examples  # noqa: E402


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def timed(fn, repeats: int) -> tuple[float, float]:
    """(best CPU seconds, best wall seconds) of fn over `repeats` runs."""
    cpu, wall = [], []
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return min(cpu), min(wall)


def cell(v: float) -> str:
    return "—" if v != v else f"{v:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demos", nargs="*", help="demo names (default: every shipped demo)")
    parser.add_argument("--n", type=int, default=10, help="fresh examples per demo for the agreement table")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-agreement", action="store_true")
    parser.add_argument("--no-timing", action="store_true", help="only the agreement tables")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    demos = [d for d in list_demos() if not args.demos or d.name in args.demos]
    rows = []
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {load()}")
    for demo in [] if args.no_timing else demos:
        model, tok = load_checkpoint(str(demo.path))
        text = demo.card.get("examples", ["abc"])[0]
        times = {m: timed(lambda m=m: attribute(model, tok, text, method=m), args.repeats) for m in METHODS}
        for m in METHODS:
            rows.append([demo.name, repr(text), m, f"{times[m][0]:.3f}", f"{times[m][1]:.3f}",
                         f"{times[m][0] / max(times['occlusion'][0], 1e-9):.1f}x"])  # fmt: skip
    if rows:
        print(f"Time of model.attribute per method (load average {load()}, torch threads 1)")
        print(table(["demo", "input", "method", "CPU s", "wall s", "CPU vs occlusion"], rows))
    if args.no_agreement:
        return
    for demo in demos:
        model, tok = load_checkpoint(str(demo.path))
        try:
            examples = fresh_examples(demo.card, args.n)
        except UnknownTraining:
            continue
        result = agreement_over(model, tok, examples)
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        print(f"\n{demo.name}: agreement over {result.examples} fresh examples ({when}, load average {load()})")
        print(table(["explanation", "Spearman with occlusion", "top token is gold"],
                    [[n, cell(s), cell(g)] for n, s, g in zip(result.names, result.spearman, result.gold)]))  # fmt: skip


if __name__ == "__main__":
    main()
