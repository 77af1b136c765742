"""ui/serving/base_path.py: the page's HTML tells Streamlit's front end where the app's root is (so that a page opened by
its own address asks nothing of /page/_stcore: streamlit#7074); every other response passes byte for byte. The
browser tests (harness/browser.Watch) fail on any failed request, a page opened by its address included."""

from __future__ import annotations

import asyncio
import gzip

import pytest

from ui.serving.base_path import BasePath, base_script

PAGE = b"<!doctype html><html><head><title>x</title></head><body></body></html>"


def served(path: str, content_type: bytes, body: bytes, chunks: int = 1, base: str = "", method: str = "GET"):
    """(start message, body, request headers the app saw) of one request through BasePath around a tiny app that
    gzips its answer when asked to, as Streamlit's server does."""
    seen = {}

    async def inner(scope, receive, send):
        seen["headers"] = dict(scope["headers"])
        data = gzip.compress(body) if b"gzip" in seen["headers"].get(b"accept-encoding", b"") else body
        headers = [(b"content-type", content_type), (b"content-length", str(len(data)).encode()), (b"etag", b'"1"')]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        step = max(1, len(data) // chunks)
        parts = [data[i : i + step] for i in range(0, len(data), step)] or [b""]
        for k, part in enumerate(parts):
            await send({"type": "http.response.body", "body": part, "more_body": k < len(parts) - 1})

    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request"}

    scope = {"type": "http", "method": method, "path": path, "headers": [(b"accept-encoding", b"gzip, br")]}
    asyncio.run(BasePath(inner, base_url_path=base)(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"), seen["headers"]


@pytest.mark.parametrize("path", ["/", "/decoding", "/attention"])
@pytest.mark.parametrize("chunks", [1, 3])
def test_a_page_gets_the_base_script_in_its_head(path, chunks):
    start, body, asked = served(path, b"text/html; charset=utf-8", PAGE, chunks)
    assert body == PAGE.replace(b"<head>", b"<head>" + base_script(""), 1)
    headers = dict(start["headers"])
    assert int(headers[b"content-length"]) == len(body) and b"etag" not in headers
    assert b"accept-encoding" not in asked  # asked uncompressed, so that the script can go in
    assert b'window.__streamlit={BACKEND_BASE_URL:location.origin + "/"}' in body


def test_a_base_url_path_is_part_of_the_base():
    assert b'location.origin + "/viz/"' in base_script("/viz/") and base_script("viz") == base_script("/viz")


@pytest.mark.parametrize(
    "path, content_type",
    [
        ("/_stcore/health", b"text/plain"),
        ("/static/js/index.js", b"text/javascript"),
        ("/decoding", b"application/json"),
    ],
)
def test_everything_else_passes_as_the_app_sent_it(path, content_type):
    start, body, asked = served(path, content_type, b"payload" * 100, chunks=2)
    assert gzip.decompress(body) == b"payload" * 100 if b"accept-encoding" in asked else body == b"payload" * 100
    assert dict(start["headers"])[b"etag"] == b'"1"'
    if path != "/decoding":  # not a page's address: the request itself unchanged too
        assert asked[b"accept-encoding"] == b"gzip, br"
