"""Write a lecture pack: one self-contained HTML file with every view of a model for a list of inputs.

    {prog} --model checkpoints/translate --out pack.html
    {prog} --model reverse --input "stressed" --input "drawer" --out pack.html
    {prog} --model reverse --lang zh --out pack-zh.html      (the pack's text in Chinese)

--model is a checkpoint folder (or file) or the name of a shipped demo; without --input the examples of
the checkpoint's card.json are used. The file opens in any browser with no server and no network.
A state_dict of another implementation takes what the app's import page asks for: --n-heads and its vocabulary
files (--vocab, or --source-vocab and --target-vocab), e.g.
    {prog} --model annotated.pt --n-heads 8 --vocab vocab.json --input "ein Hund" --out pack.html
An encoder-decoder whose weights are too large for one file (above 7 MB of graphs, e.g. an opus-mt model) is
written as a folder instead: --out pack.html writes pack/index.html and its float16 weights beside it
(weights-00.js, ...); open index.html.
`transformer-viz pack` (after `pip install .`) and `python -m scripts.lecture_pack` (from the repository
root) are the same command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from i18n import LANGUAGES, language_scope
from model import CheckpointError, load_checkpoint
from model.checkpoints.checkpoint import load_card
from model.checkpoints.demos import list_demos
from pack.page import lecture_pack_files
from pack.records import MAX_INPUTS, bounded_inputs, pack_records
from tasks.cards import pack_checks


def resolve_model(name: str) -> Path:
    """A path as given, or a shipped demo by name, bare or as the app names it (demo:NAME)."""
    path = Path(name).expanduser()
    if path.exists():
        return path
    demos = {d.name: d.path for d in list_demos()}
    bare = name.removeprefix("demo:")
    if bare in demos:
        return demos[bare]
    raise CheckpointError(f"no checkpoint at {name} and no demo of that name (demos: {', '.join(demos) or 'none'})")


def main(argv: Sequence[str] | None = None, prog: str = "transformer-viz pack") -> int:
    """Write the pack the command line asks for; 0 when written, 1 with the reason on stderr."""
    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__.format(prog=prog), formatter_class=argparse.RawDescriptionHelpFormatter
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
    # what the app's import page asks of a checkpoint that does not say it (load_checkpoint's options)
    parser.add_argument("--n-heads", type=int, help="attention heads of a state_dict that does not name them")
    parser.add_argument("--vocab", type=Path, help="a vocabulary file for both sides (vocab.json, a token list)")
    parser.add_argument("--source-vocab", type=Path, help="the source side's vocabulary file")
    parser.add_argument("--target-vocab", type=Path, help="the target side's vocabulary file")
    args = parser.parse_args(argv)
    try:
        path = resolve_model(args.model)
        files = {"vocab": args.vocab, "source_vocab": args.source_vocab, "target_vocab": args.target_vocab}
        model, tokenizer = load_checkpoint(path, n_heads=args.n_heads, **files)
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
        card = load_card(path) if path.is_dir() else {}
        records = pack_records(
            model, tokenizer, texts, label=path.name, progress=progress, checks=pack_checks(card), folder=True
        )
        print(file=sys.stderr)
        with language_scope(args.lang):
            files = lecture_pack_files(records, title=args.title)
        if len(files) == 1:  # one file; --out new/pack.html makes new/
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_bytes(files["index.html"])
            written = str(args.out)
        else:  # a folder: index.html and the weights beside it
            folder = args.out.with_suffix("") if args.out.suffix == ".html" else args.out
            folder.mkdir(parents=True, exist_ok=True)
            for name, data in files.items():
                (folder / name).write_bytes(data)
            written = f"{folder / 'index.html'} and {len(files) - 1} weight files beside it"
    except (CheckpointError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"wrote {written} ({sum(len(d) for d in files.values()) / 1e6:.2f} MB, {len(texts)} inputs)")
    return 0


if __name__ == "__main__":  # python -m cli.pack: the same command
    sys.exit(main(prog="python -m cli.pack"))
