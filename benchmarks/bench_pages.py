"""Server-side time of each app page with a shipped demo model and a 20-token input.

    python -m benchmarks.bench_pages [--model reverse] [--repeats 5]

Target (issue 4): under 300 ms per page after the first load. Each page runs in AppTest (the whole
script: sidebar, cached model calls, figure building and serialisation); "first" includes loading the
model and computing the capture, "after" is the median of reruns with a new selection each time
(a widget change, as when a user clicks), served from Streamlit's caches where the inputs repeat.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import table  # noqa: E402
from model.demos import list_demos  # noqa: E402
from tests.apptest_helpers import PAGES, charts, open_page  # noqa: E402

TWENTY = {"reverse": "abcdefghijklmnopqrst"[:19], "copy": "abcdefghijklmnopqrst"[:19],
          "dates": "saturday 21st of nov", "translate": "the red car sees a small dog and the old cats eat the green apples"}
# per page: a widget to change between reruns, and the values to cycle through
CHANGES = {
    "attention": ("radio", "att_kind", ["encoder_self", "decoder_self", "cross"]),
    "positional": ("slider", "pe_len", [80, 100, 120]),
    "decoding": ("button", "dec_next", None),
    "model": ("radio", "model_shape_kind", ["encoder self", "decoder self", "cross"]),
}


def rerun(at, page: str, i: int) -> float:
    kind, key, values = CHANGES[page]
    t0 = time.perf_counter()
    if kind == "button":
        at.button(key=key).click().run()
    else:
        getattr(at, kind)(key=key).set_value(values[i % len(values)]).run()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    demos = {d.name: d for d in list_demos()}
    parser.add_argument("--model", default=next(iter(demos), None), help=f"one of {', '.join(demos) or 'none found'}")
    parser.add_argument("--repeats", type=int, default=6)
    args = parser.parse_args()
    if args.model not in demos:
        sys.exit(f"no shipped demo model {args.model!r} in checkpoints/ (found: {', '.join(demos) or 'none'})")
    text = TWENTY.get(args.model, "abcdefghijklmnopqrs")
    rows = []
    for page in PAGES:
        t0 = time.perf_counter()
        at = open_page(page, f"demo:{args.model}", text=text)
        first = time.perf_counter() - t0
        assert not at.exception, at.exception
        times = [rerun(at, page, i) for i in range(args.repeats)]
        assert not at.exception, at.exception
        after = statistics.median(times)
        rows.append([page, len(charts(at)), f"{first * 1e3:.0f}", f"{after * 1e3:.0f}", f"{max(times) * 1e3:.0f}",
                     "yes" if after < 0.3 else "NO"])
    session = open_page("attention", f"demo:{args.model}", text=text).session_state["_session"]
    print(f"model {args.model}; input {text!r}: {len(session.check.text.split()) if session.tokenizer.source.level == 'word' else len(session.check.text)} tokens + </s>")
    print(table(["page", "figures", "first load ms", "after, median ms", "after, max ms", "< 300 ms"], rows))


if __name__ == "__main__":
    main()
