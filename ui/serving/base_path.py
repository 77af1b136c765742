"""Telling Streamlit's front end where the app's root is, so that a page's own address makes no failed requests.

Opened on a page's address (/decoding, a link a lecturer shared), Streamlit's front end does not know whether
/decoding is the app's base path (a server may live under a prefix), so it first asks /decoding/_stcore/health and
/decoding/_stcore/host-config, which its server answers 404 on purpose, then the root's: two failed requests in every
visitor's console (streamlit#7074). The front end skips that guess when the page defines window.__streamlit with
BACKEND_BASE_URL (streamlit#11537), which Streamlit's static index.html does not. (MAIN_PAGE_BASE_URL is left alone:
set too, a text typed right after a page opened from a link could lose the sidebar's checkpoint path.) This ASGI
middleware (app.py mounts it on st.App) adds that one script to the HTML the server sends for a page, the base being
the server's own root (plus server.baseUrlPath when the operator set one); every other response passes unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]


def base_script(base_url_path: str) -> bytes:
    """The <script> that sets the front end's server address: the page's origin, then the configured base path."""
    path = "/".join(p for p in base_url_path.split("/") if p)
    base = f'location.origin + "/{path + "/" if path else ""}"'
    return f"<script>window.__streamlit={{BACKEND_BASE_URL:{base}}};</script>".encode()


def _is_page(scope: Scope) -> bool:
    """A GET of a page's address (what index.html answers), not of the server's API or of a static file."""
    path = scope.get("path", "")
    last = path.rsplit("/", 1)[-1]
    return scope["type"] == "http" and scope.get("method") == "GET" and "/_stcore/" not in path and "." not in last


class BasePath:
    """ASGI middleware: index.html with base_script in its <head>; everything else as the app sends it."""

    def __init__(self, app: ASGIApp, base_url_path: str | None = None):
        self.app = app
        if base_url_path is None:
            from streamlit import config

            base_url_path = config.get_option("server.baseUrlPath") or ""
        self.script = base_script(base_url_path)

    async def __call__(self, scope: Scope, receive, send) -> None:
        if not _is_page(scope):
            await self.app(scope, receive, send)
            return
        # the page's HTML uncompressed (the server's gzip runs inside this middleware): it is 8 KB
        scope = dict(scope, headers=[(k, v) for k, v in scope["headers"] if k.lower() != b"accept-encoding"])
        start: Message | None = None  # the HTML's response start, held until its body is complete
        passing = False  # not HTML after all: as the app sends it
        chunks: list[bytes] = []

        async def send_page(message: Message) -> None:
            nonlocal start, passing
            if message["type"] == "http.response.start":
                passing = not dict(message.get("headers", [])).get(b"content-type", b"").startswith(b"text/html")
                if passing:
                    await send(message)
                else:
                    start = message
                return
            if passing or message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = b"".join(chunks).replace(b"<head>", b"<head>" + self.script, 1)
            # its validators go: a cached copy must not stand for a page with another base
            dropped = (b"content-length", b"etag", b"last-modified")
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() not in dropped]
            await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, send_page)
