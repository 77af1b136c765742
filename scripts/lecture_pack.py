"""Write a lecture pack (the command lives in cli/pack.py; `transformer-viz pack` after `pip install .`).

    python -m scripts.lecture_pack --model reverse --out pack.html

Run from the repository root (scripts/ is a namespace package); `--help` lists the options.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cli.pack import main, resolve_model  # noqa: E402, F401

if __name__ == "__main__":
    sys.exit(main(prog="python -m scripts.lecture_pack"))
