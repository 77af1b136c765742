"""The length experiment of the reverse demos: exact match per input length, 1 .. 2 x the longest training
input, one curve per positional kind and per shift k, written into each demo's card (`length_experiment`) so the
positional page draws them at once, and summarised as the README's table.

    .venv/bin/python scripts/length_experiment.py                      every reverse demo, every shift of the page
    .venv/bin/python scripts/length_experiment.py --shifts 0,10        as trained and shifted by 10 (the cards' curves)
    .venv/bin/python scripts/length_experiment.py --only reverse_rope  one demo (run several side by side)
    .venv/bin/python scripts/length_experiment.py --table              the table from the cards, nothing computed
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model import load_checkpoint  # noqa: E402
from model.checkpoints.checkpoint import CARD  # noqa: E402
from model.checkpoints.demos import list_demos  # noqa: E402
from tasks import length_experiment as lx  # noqa: E402
from tasks.pe_experiment import training_sources  # noqa: E402

SHIFTS = (0, 1, 5, 10, 25, 50)  # the page's choices (pages/positional_models.py)


def reverse_demos(only: str | None):
    return [
        d
        for d in list_demos()
        if d.card.get("task") == "reverse"
        and d.card.get("shape", "encoder-decoder") == "encoder-decoder"
        and (only is None or d.name == only)
    ]  # the decoder-only demos measure their own curve (tasks/decoder_only.py)


def measure(demo, shifts) -> None:
    model, tokenizer = load_checkpoint(demo.path)
    low, high = lx.training_range(demo.card)
    seen = training_sources("reverse", int(demo.card["recipe"]["train_size"]), int(demo.card["seed"]))
    examples = lx.examples_by_length("reverse", range(1, 2 * high + 1), lx.LENGTH_EXAMPLES, exclude=seen)
    curves, start = [], time.time()
    for k in shifts:
        curves.append(lx.length_curve(model, tokenizer, examples, k))
    card = json.loads((demo.path / CARD).read_text(encoding="utf-8"))
    card[lx.CARD_KEY] = lx.card_entry(curves, datetime.date.today().isoformat())
    (demo.path / CARD).write_text(json.dumps(card, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"{demo.name}: {len(shifts)} curves in {time.time() - start:.0f} s", flush=True)


def table(demos) -> str:
    rows = ["| model | positions | 1-24 letters (trained) | 25-30 | 31-48 | right ≥ 50% up to | 1-24, every position + 10 |",
            "|---|---|---|---|---|---|---|"]  # fmt: skip
    for demo in demos:
        plain, shifted = lx.card_curve(demo.card, 0), lx.card_curve(demo.card, 10)
        if plain is None:
            continue

        def mean(curve, a, b):
            n = curve.lengths if curve is not None else None
            return "—" if curve is None else f"{np.mean(curve.exact_match[(n >= a) & (n <= b)]):.0%}"

        kind = demo.card["config"]["positional"]
        rows.append(f"| {demo.name} | {kind} | {mean(plain, 1, 24)} | {mean(plain, 25, 30)} | {mean(plain, 31, 48)} | "
                    f"{lx.holds_up_to(plain)} | {mean(shifted, 1, 24)} |")  # fmt: skip
    return "\n".join(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", help="one demo folder name")
    p.add_argument("--table", action="store_true", help="print the table from the cards only")
    p.add_argument("--shifts", default=",".join(map(str, SHIFTS)), help="the shifts k to measure, e.g. 0,10")
    args = p.parse_args()
    torch.set_num_threads(1)
    demos = reverse_demos(args.only)
    if not args.table:
        for demo in demos:
            measure(demo, [int(k) for k in args.shifts.split(",")])
        demos = reverse_demos(args.only)  # the cards as now written
    print(table(demos))


if __name__ == "__main__":
    main()
