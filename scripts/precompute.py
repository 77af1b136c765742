"""Shipped demos' slow results computed once and written beside their weights, in each demo's results.json,
so that no visitor waits for them: the exact match on 200 fresh examples behind the positional page's "six kinds side
by side" (the decoder-only demos' too: fresh prompts `source=` of their trained lengths, tasks/intervened.py), and
with each kind of changed positions (as "Positions at inference" first shows it) behind its verdicts.

    .venv/bin/python scripts/precompute.py                   every demo whose card names its task
    .venv/bin/python scripts/precompute.py --only reverse    one demo

results.json holds the sha256 of the demo's other files (ui/serving/disk_cache.folder_digest): a retrained demo's file no
longer matches, and the app computes (and keeps on disk) instead of reading it. Run again after training.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model import load_checkpoint  # noqa: E402
from model.checkpoints.demos import list_demos  # noqa: E402
from model.interventions import NONE  # noqa: E402
from tasks import intervened  # noqa: E402
from ui.serving.disk_cache import SHIPPED, VERSION, folder_digest, shipped_key  # noqa: E402
from ui.views.positional_interventions import default_changes  # noqa: E402

FRESH = 200  # ui/views/positional_models.FRESH and ui/views/positional_interventions.FRESH


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="demo names (default: every demo whose card names its task)")
    args = parser.parse_args()
    for demo in list_demos():
        if args.only and demo.name not in args.only:
            continue
        try:
            examples = intervened.fresh_examples(demo.card, FRESH)
        except intervened.UnknownTraining:
            print(f"{demo.name}: its card does not name its task; skipped")
            continue
        started = time.perf_counter()
        model, tokenizer = load_checkpoint(demo.path)
        path = demo.path / SHIPPED
        data = json.loads(path.read_text()) if path.is_file() else {}
        digest = folder_digest(demo.path)
        results = data.get("results", {}) if data.get("digest") == digest and data.get("version") == VERSION else {}
        for changes in [NONE, *default_changes()]:
            key = shipped_key("exact_match", intervened.match_params(FRESH, changes))
            if key in results:  # computed from these very files before
                continue
            try:
                result = intervened.exact_match_with(model, tokenizer, examples, changes)
            except ValueError as err:  # a shift past max_len for the longer examples: the page says so instead
                print(f"{demo.name} {changes.describe()}: {err}")
                continue
            results[key] = intervened.match_to_json(result)
            print(f"{demo.name} {changes.describe()}: exact match {result.exact_match:.3f} on {FRESH}")
            path.write_text(json.dumps({"version": VERSION, "digest": digest, "results": results}, indent=1) + "\n")
        print(f"{demo.name}: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
