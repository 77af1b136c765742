"""Server memory under many distinct inputs: N inputs typed through every page of a real server.

    python -m benchmarks.bench_memory [--inputs 500] [--model reverse] [--every 50]

Target (issue 12): 500 distinct inputs through every page leave the server's resident memory
(VmRSS of the `streamlit run app.py` process) under 1.5 GB with the demos. One session per page
(attention, positional, decoding, model) types the inputs in turn over Streamlit's own websocket
protocol (harness/stream_client.py, no browser); each input is new to that page, so every run misses
the caches and adds an entry until the caches' bounds evict. Prints RSS every `--every` inputs, with
the load average beside (the baseline row is the server after its first run of each page).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import table  # noqa: E402
from harness.browser import AppServer  # noqa: E402
from harness.stream_client import distinct_texts, feed, rss_bytes  # noqa: E402

PAGES = ["", "inside", "positional", "decoding", "model"]
LIMIT_MB = 1536


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=500)
    parser.add_argument("--model", default="reverse")
    parser.add_argument("--every", type=int, default=50)
    args = parser.parse_args()
    texts = distinct_texts(args.inputs)
    with tempfile.TemporaryDirectory() as tmp:
        server = AppServer(Path(tmp))
        try:
            pid = server.process.pid
            rows, done, started = [], {}, time.perf_counter()
            start_mb = rss_bytes(pid) / 2**20

            def after(i, run):
                if run.exceptions or run.status != "FINISHED_SUCCESSFULLY":
                    raise RuntimeError(f"input {i}: {run.status} {run.exceptions}")
                done[i] = done.get(i, 0) + 1
                if done[i] == len(PAGES) and (i % args.every == 0 or i == 1 or i == args.inputs - 1):
                    rows.append(
                        [
                            i + 1,
                            f"{rss_bytes(pid) / 2**20:.0f}",
                            f"{time.perf_counter() - started:.0f}",
                            " ".join(f"{x:.1f}" for x in os.getloadavg()),
                        ]
                    )
                    print("progress:", rows[-1], flush=True)

            async def all_pages():
                await asyncio.gather(*(feed(server.origin, page, texts, f"demo:{args.model}", after) for page in PAGES))

            asyncio.run(all_pages())
            end_mb = rss_bytes(pid) / 2**20
        finally:
            server.stop()
    print(
        f"server RSS before any page: {start_mb:.0f} MB; after {args.inputs} distinct inputs x {len(PAGES)} pages: "
        f"{end_mb:.0f} MB (target < {LIMIT_MB} MB: {'met' if end_mb < LIMIT_MB else 'NOT met'})"
    )
    print(table(["inputs through every page", "server RSS (MB)", "seconds", "load average (1/5/15 min)"], rows))


if __name__ == "__main__":
    main()
