"""Take the README's screenshot: the attention page of the reverse demo, cross-attention, in Chromium.

.venv/bin/python scripts/screenshot.py [--out docs/screenshot.png] [--text stressed]
.venv/bin/python scripts/screenshot.py --lang zh --out docs/screenshot-zh.png      (README.zh.md's, in Chinese)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser_helpers import AppServer, chromium  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshot.png"))
    parser.add_argument("--model", default="reverse")
    parser.add_argument("--text", default="transformers")
    parser.add_argument("--lang", default="en", help="the interface language (en, zh)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, chromium() as browser:
        server = AppServer(Path(tmp))
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(
                f"{server.origin}/?model=demo:{args.model}&text={args.text}&att_kind=cross&att_layer=1&lang={args.lang}"
            )
            page.locator(".main-svg .xtick text").first.wait_for(timeout=90_000)
            page.wait_for_timeout(1500)
            page.screenshot(path=args.out)
            print(f"saved {args.out}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
