"""Write a lecture pack: one self-contained HTML file with every view of a model for a list of inputs.

    python -m scripts.lecture_pack --model checkpoints/translate --out pack.html
    python -m scripts.lecture_pack --model reverse --input "stressed" --input "drawer" --out pack.html
    python -m scripts.lecture_pack --model reverse --lang zh --out pack-zh.html      (the pack's text in Chinese)

--model is a checkpoint folder (or file) or the name of a shipped demo; without --input the examples of
the checkpoint's card.json are used. The file opens in any browser with no server and no network.
Run from the repository root (scripts/ is a namespace package).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from i18n import LANGUAGES, language_scope  # noqa: E402
from model import CheckpointError, load_checkpoint  # noqa: E402
from model.analysis.lecture import MAX_INPUTS, bounded_inputs, pack_records  # noqa: E402
from model.checkpoints.checkpoint import load_card  # noqa: E402
from model.checkpoints.demos import list_demos  # noqa: E402
from viz.lecture_pack import lecture_pack_html  # noqa: E402


def resolve_model(name: str) -> Path:
    """A path as given, or a shipped demo by name."""
    path = Path(name).expanduser()
    if path.exists():
        return path
    demos = {d.name: d.path for d in list_demos()}
    if name in demos:
        return demos[name]
    raise CheckpointError(f"no checkpoint at {name} and no demo of that name (demos: {', '.join(demos) or 'none'})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.lecture_pack", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model", required=True, help="checkpoint folder or file, or a demo name (reverse, translate, ...)"
    )
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="TEXT",
        help=f"an input text; repeat for more (at most {MAX_INPUTS}); default: the card's examples",
    )
    parser.add_argument("--inputs-file", type=Path, help="a text file with one input per line")
    parser.add_argument("--out", type=Path, default=Path("lecture_pack.html"), help="the HTML file to write")
    parser.add_argument("--title", default="", help="the page's heading (default: 'Lecture pack', in --lang)")
    parser.add_argument("--lang", choices=list(LANGUAGES), default="en", help="the language of the pack's text")
    args = parser.parse_args(argv)
    try:
        path = resolve_model(args.model)
        model, tokenizer = load_checkpoint(path)
        lines = list(args.input)
        if args.inputs_file:
            lines += args.inputs_file.read_text(encoding="utf-8").splitlines()
        if not lines:
            lines = list(load_card(path).get("examples", [])) if path.is_dir() else []
        texts, notes = bounded_inputs(lines)
        if not texts:
            parser.error(
                "no inputs: give --input TEXT (or --inputs-file), or use a checkpoint whose card.json has examples"
            )
        for note in notes:
            print(note, file=sys.stderr)
        progress = lambda done, total: print(f"\r{done}/{total} inputs run", end="", file=sys.stderr, flush=True)  # noqa: E731
        records = pack_records(model, tokenizer, texts, label=path.name, progress=progress)
        print(file=sys.stderr)
        with language_scope(args.lang):
            page = lecture_pack_html(records, title=args.title).encode("utf-8")
    except (CheckpointError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    args.out.write_bytes(page)
    print(f"wrote {args.out} ({len(page) / 1e6:.2f} MB, {len(texts)} inputs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
