"""The decoder-only demos' card numbers measured again from the shipped weights, with the evaluation that wrote them.

    python -m benchmarks.bench_demo_cards                 # reverse_decoder_rope and reverse_decoder_nope
    python -m benchmarks.bench_demo_cards --write-cards   # and write the measured numbers into their card.json

Per demo, its card's recipe rebuilds the held-out strings (`held_out`, the training strings excluded) and the
length-experiment strings (`examples_by_length`) as tasks/decoder_only.py draws them when it trains the demo (more of
them: REPORT_EXAMPLES and LENGTH_EXAMPLES), and
the same evaluation (tasks.decoder_only.exact_match: greedy continuation of `source=` through the library's one
decoding loop) scores them. The table and benchmarks/results/bench_demo_cards.json hold the numbers; the cards,
README.md, README.zh.md and docs/demos.md state them (tests/test_demo_card_numbers.py checks both against this file).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEMOS = ("reverse_decoder_rope", "reverse_decoder_nope")
# tasks/decoder_only.py drew 500 and 50 per length when it trained the demos: at 50 strings a length's exact match
# moves by about 0.07 from one draw to another, enough to turn "right half the time" into "not"
REPORT_EXAMPLES = 2000
LENGTH_EXAMPLES = 500


def measure(name: str, report_examples: int, length_examples: int) -> dict:
    """The card's held_out_exact_match and length_experiment, measured again on strings drawn as the card's were:
    the first `report_examples` held-out strings (the card's own are the first of them) and `length_examples`
    fresh strings of each length (fewer where fewer exist)."""
    import torch

    from model import load_checkpoint
    from model.checkpoints.checkpoint import load_card
    from tasks import decoder_only as d
    from tasks.registry import get_task
    from tasks.tasks import dataset, held_out

    torch.set_num_threads(1)
    folder = ROOT / "checkpoints" / name
    model, tok = load_checkpoint(folder)
    card = load_card(folder)
    recipe = card["recipe"]
    task = get_task("reverse")
    examples = [e for e in dataset(task, recipe["train_size"], recipe["seed"]) if len(e.source) <= recipe["max_length"]]
    sources = {e.source for e in examples}
    n = report_examples
    report = [e for e in held_out(task, 3 * n, recipe["seed"] + 1, exclude=sources)
              if len(e.source) <= recipe["max_length"]][:n]  # fmt: skip
    lengths = card["length_experiment"]["lengths"]
    curve = d.length_experiment(model, tok, lengths, length_examples, sources)
    return {
        "held_out_exact_match": round(d.exact_match(model, tok, report), 3),
        "held_out_examples": len(report),
        "length_experiment": curve,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write-cards", action="store_true", help="write the measured numbers into each card.json")
    parser.add_argument("--report-examples", type=int, default=REPORT_EXAMPLES)
    parser.add_argument("--length-examples", type=int, default=LENGTH_EXAMPLES)
    args = parser.parse_args()
    rows = []
    for name in DEMOS:
        found = measure(name, args.report_examples, args.length_examples)
        curve = found["length_experiment"]
        rows.append([name, found["held_out_examples"], found["held_out_exact_match"],
                     json.dumps(dict(zip(curve["lengths"], curve["exact_match"], strict=True)))])  # fmt: skip
        if args.write_cards:
            path = ROOT / "checkpoints" / name / "card.json"
            card = json.loads(path.read_text())
            card.update(found)
            path.write_text(json.dumps(card, indent=1, ensure_ascii=False))
    print(table(["demo", "held-out examples", "exact match", "exact match per length"], rows,
                title="Decoder-only demos: the card's numbers measured again"))  # fmt: skip


if __name__ == "__main__":
    main()
