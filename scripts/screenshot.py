"""Take the README's screenshot: the attention page of a demo model, cross-attention, in Chromium at 1366x768.

.venv/bin/python scripts/screenshot.py [--out docs/screenshot.png] [--model translate] [--text "..."]
.venv/bin/python scripts/screenshot.py --lang zh --out docs/screenshot-zh.png      (README.zh.md's, in Chinese)

1366x768 is a projector's screen: what the shot shows is what a room sees, sidebar open. The shot is taken when
the page's script run is over and every chart is drawn (no fixed wait).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.browser import PROJECTOR, AppServer, Watch, chromium, wait_idle  # noqa: E402

DRAWN = """() => {
    const plots = [...document.querySelectorAll('.js-plotly-plot')];
    return plots.length > 0 && plots.every(p => p._fullLayout && p.querySelector('.xtick text'));
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshot.png"))
    parser.add_argument("--model", default="translate")
    parser.add_argument("--text", default="the red car sees a small dog")
    parser.add_argument("--width", type=int, default=PROJECTOR["width"])
    parser.add_argument("--height", type=int, default=PROJECTOR["height"])
    parser.add_argument("--lang", default="en", help="the interface language (en, zh)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, chromium() as browser:
        server = AppServer(Path(tmp))
        try:
            server.first_visit(browser)
            # Offline but for the app: the shot shows what a room without internet sees.
            watch = Watch(browser, server.origin)
            try:
                watch.page.set_viewport_size({"width": args.width, "height": args.height})
                watch.goto(server.url(model=f"demo:{args.model}", text=args.text, att_kind="cross", lang=args.lang))
                watch.page.wait_for_function(DRAWN, timeout=120_000)
                wait_idle(watch.page)
                watch.page.wait_for_function(DRAWN, timeout=120_000)  # the run that ended drew its charts
                watch.page.screenshot(path=args.out)
                if watch.blocked or watch.errors or watch.console or watch.failed or watch.tracebacks():
                    print(f"the page had problems: {watch.problems()}; tracebacks {watch.tracebacks()}")
            finally:
                watch.close()
            print(f"saved {args.out}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
