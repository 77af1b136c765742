"""Many distinct inputs through every page of a real server leave its memory bounded.

A `streamlit run app.py` with the demos; one session per page (harness/stream_client.py, Streamlit's own
websocket protocol, no browser) types N distinct inputs, each a cache miss on that page. The server's
resident memory (VmRSS) is read after a warm-up and at the end. The full-size run (500 inputs through
every page) is benchmarks/bench_memory.py; this one is small enough for the suite.
"""

from __future__ import annotations

import asyncio

import pytest

from harness.stream_client import Stalled, distinct_texts, feed, rss_bytes
from model.checkpoints.demos import list_demos
from tests.browser_helpers import AppServer

PAGES = ["", "inside", "positional", "decoding", "model"]  # "" is the attention page, the app's root
WARMUP, INPUTS = 4, 16
LIMIT = 1.5 * 2**30  # the target for 500 inputs; a small run must stay far below it
GROWTH = 300 * 2**20  # after warm-up, 12 more inputs per page may fill caches, not grow without end


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not any(d.name == "reverse" for d in list_demos()):
        pytest.skip("the reverse demo is missing from checkpoints/")
    srv = AppServer(tmp_path_factory.mktemp("memory_server"))
    try:
        yield srv
    finally:
        srv.stop()


def test_distinct_inputs_through_every_page_keep_memory_bounded(server):
    texts = distinct_texts(INPUTS)
    pid = server.process.pid
    marks: dict[str, int] = {}

    def after(i, run):
        if i == WARMUP:
            marks.setdefault("warm", rss_bytes(pid))

    async def all_pages():
        return await asyncio.gather(*(feed(server.origin, page, texts, after=after) for page in PAGES))

    try:
        results = asyncio.run(all_pages())
    except Stalled as stalled:  # what the server's threads were doing, to find why
        pytest.fail(f"{stalled}\nthe server's threads:\n{server.threads()[-12000:]}")
    end = rss_bytes(pid)
    for page, runs in zip(PAGES, results):
        assert len(runs) == INPUTS
        for text, run in zip(texts, runs):
            assert run.drew(page), (page, text, run.status, run.exceptions, run.errors, run.kinds)
    assert end < LIMIT, f"server memory {end / 2**20:.0f} MB"
    assert end - marks["warm"] < GROWTH, f"grew from {marks['warm'] / 2**20:.0f} MB to {end / 2**20:.0f} MB"
    assert server.healthy()
