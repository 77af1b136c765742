"""Write one view of a model as a figure for a paper or a slide: SVG, PDF or PNG (the format from --out's suffix).

    {prog} --model demo:reverse --text "stressed" --view one --out head.pdf
    {prog} --model demo:reverse --text "stressed" --view grid --layer 0 --out heads.svg --preset column
    {prog} --model checkpoints/translate --text "ein Hund" --view decoding --out steps.png --lang zh

Views: one (one head, or --head average), grid (all heads of a layer), overview (every layer x head), pe (the
positional encodings of the input's positions), decoding (the greedy steps' attention). --kind picks the attention
(encoder_self, decoder_self, cross; default: cross where the model has it). Presets: column (8.9 cm wide), page
(17.8 cm), slide (16:9). SVG and PDF are vector files with the text as text (PDF embeds its fonts); PNG is drawn at
twice the size, at least 1,600 px wide. The drawing needs the system's Chromium (nothing is downloaded).
`transformer-viz figure` (after `pip install .`) and `python -m cli.figure` (from the repository root) are the same
command.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from i18n import LANGUAGES, language_scope
from viz.figure_export import PRESETS, FigureExportError, format_of, render
from viz.figure_views import SIDES, VIEWS, ViewError

LABEL_ROOM_PX = 240  # of a preset's layout width: the query labels, axis title and colour bar beside the map


def head_arg(text: str) -> int | str:
    if text == "average":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a head number or 'average': {text!r}") from None


def parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description=__doc__.format(prog=prog), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", required=True, help="a checkpoint folder or file, or a demo (demo:reverse, reverse)")
    p.add_argument("--text", required=True, help="the input text")
    p.add_argument("--view", required=True, choices=list(VIEWS), help="the view to draw")
    p.add_argument("--out", required=True, type=Path, help="the file to write: .svg, .pdf or .png")
    p.add_argument("--layer", type=int, help="the layer (default: the last)")
    p.add_argument("--head", type=head_arg, help="a head number, or 'average' (the default)")
    p.add_argument("--kind", choices=list(SIDES), help="the attention drawn (default: cross where there is one)")
    p.add_argument("--preset", choices=list(PRESETS), default="page", help="the size (default: page)")
    p.add_argument("--lang", choices=list(LANGUAGES), default="en", help="the language of the figure's text")
    return p


def writable(out: Path) -> None:
    """Make --out's folder (as the pack command does) and check a file can be written there, before any work."""
    if out.is_dir():
        raise OSError(f"{out} is a folder: name a file")
    out.parent.mkdir(parents=True, exist_ok=True)
    if not os.access(out.parent, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise OSError(f"cannot write {out}")


def figure_bytes(model, tokenizer, text: str, view: str, preset: str, fmt: str, **where) -> bytes:
    """The model's view of the text as a file's bytes (the command's work after loading: bench_figures times it)."""
    from model import capture, greedy_decode
    from viz.figure_views import view_figure

    cap = capture(model, tokenizer, text)
    trace = greedy_decode(model, tokenizer, text) if view == "decoding" else None
    p = PRESETS[preset]
    box = (int(p.layout_px * (p.aspect or p.max_aspect)) - 40, p.layout_px - LABEL_ROOM_PX)
    return render(view_figure(view, cap, trace, box=box, **where), fmt, preset)


def main(argv: Sequence[str] | None = None, prog: str = "transformer-viz figure") -> int:
    """Write the figure the command line asks for; 0 when written, 1 with one line on stderr when it cannot be."""
    args = parser(prog).parse_args(argv)
    try:
        fmt = format_of(args.out.name)
        writable(args.out)
        from cli.pack import resolve_model
        from model import CheckpointError, load_checkpoint

        try:
            model, tokenizer = load_checkpoint(resolve_model(args.model))
            with language_scope(args.lang):
                data = figure_bytes(
                    model, tokenizer, args.text, args.view, args.preset, fmt,
                    kind=args.kind, layer=args.layer, head=args.head,
                )  # fmt: skip
        except CheckpointError as err:
            raise ViewError(str(err)) from None
        args.out.write_bytes(data)
    except (FigureExportError, ViewError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"wrote {args.out} ({len(data) / 1e3:.0f} KB, {fmt})")
    return 0


if __name__ == "__main__":  # python -m cli.figure: the same command
    sys.exit(main(prog="python -m cli.figure"))
