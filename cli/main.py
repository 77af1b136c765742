"""transformer-viz: the attention explorer's command line.

    transformer-viz serve [-- --allow-folder DIR]      the app in the browser (`streamlit run app.py`)
    transformer-viz pack --model reverse --out pack.html   a lecture pack: one HTML file, no server needed
    transformer-viz train --task reverse --out runs/reverse   train a demo model (`python -m model.train`)
    transformer-viz atlas MODEL --texts FILE --out atlas.json   the head atlas (locally, or --ray ADDRESS)
    transformer-viz figure --model demo:reverse --text abc --view one --out head.pdf   a figure for a paper or slide

`transformer-viz COMMAND --help` lists a command's options.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

PROG = "transformer-viz"


def _serve(argv: list[str], prog: str) -> int:
    from cli.serve import main

    return main(argv, prog)


def _pack(argv: list[str], prog: str) -> int:
    from cli.pack import main

    return main(argv, prog)


def _figure(argv: list[str], prog: str) -> int:
    from cli.figure import main

    return main(argv, prog)


def _train(argv: list[str], prog: str) -> int:
    from tasks.train import main

    if any(a in ("-h", "--help") for a in argv):
        print(f"{prog} runs `python -m model.train` with the same options:\n", flush=True)
    main(argv)
    return 0


def _atlas(argv: list[str], prog: str) -> int:
    from cli.atlas import main

    return main(argv, prog)


# name -> (what it does, how it runs); each command parses its own options (and its own --help)
COMMANDS: dict[str, tuple[str, Callable[[list[str], str], int]]] = {
    "serve": ("run the app (streamlit run app.py) with the project's settings", _serve),
    "pack": ("write a lecture pack: one HTML file that needs no server", _pack),
    "figure": ("write one view as a figure for a paper or a slide (.svg, .pdf, .png)", _figure),
    "train": ("train a demo model on a built-in task (python -m model.train)", _train),
    "atlas": ("the head atlas of a model over a corpus, as JSON (locally, or as Ray tasks)", _atlas),
}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = top.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, (help_text, _) in COMMANDS.items():
        commands.add_parser(name, help=help_text, add_help=False)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        parser().parse_args(argv)  # --help, or an error naming the commands (exits)
        parser().print_help(sys.stderr)
        return 2
    run = COMMANDS[argv[0]][1]
    return run(argv[1:], f"{PROG} {argv[0]}")


if __name__ == "__main__":
    sys.exit(main())
