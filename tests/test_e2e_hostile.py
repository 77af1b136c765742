"""Issue 22 in a real browser, where the behaviour is the browser's: a link carrying Markdown makes no visitor's
browser fetch an outside address and shows the text itself; uploads with hostile names are refused by their own
name, with no private path, no OS error and nothing left behind."""

from __future__ import annotations

import re

import pytest

from i18n import _
from tests.browser_helpers import Watch, sidebar_errors, upload_field, wait_idle, wait_text
from tests.i18n_helpers import matching, msgid_starting

# what the sidebar says of a file that is no checkpoint, after its name, up to the list of formats
NO_FORMAT = (
    _(msgid_starting("{name} is a file that holds no checkpoint format I know")).split("{name}")[1].split(";")[0]
)

IMAGE = "![w](http://127.0.0.1:9/warn.png)"
LINK = "[evil](http://evil.example/phish)"


def test_a_link_with_markdown_fetches_nothing_and_shows_the_text(browser, server):
    watch = Watch(browser, server.origin)
    try:
        watch.goto(server.url(model="demo:translate", text=f"the red apple {IMAGE} {LINK}"))
        warning = wait_text(watch, re.compile(matching("Not in the vocabulary, read as <unk>: {symbols}.")))
        wait_idle(watch.page)
        text = warning.inner_text().replace("\u200b", "")  # a zero-width space breaks each would-be autolink
        # the characters, as typed (the vocabulary splits punctuation off unknown words: quoted piece by piece)
        assert "w](http://127.0.0.1:9/warn.png" in text and "evil](http://evil.example/phish" in text
        assert watch.page.locator('[data-testid="stMain"] a[href*="evil.example"]').count() == 0
        assert watch.page.locator('img[src*="127.0.0.1:9"]').count() == 0
        watch.assert_clean()  # no request left the app's own origin (127.0.0.1:9 included)
    finally:
        watch.close()


@pytest.mark.parametrize(
    "name",
    ["..", "x" * 300 + ".pt", f"{IMAGE}.pt", "<img src=x onerror=alert(1)>.pth"],
    ids=["dot-dot", "long", "markdown", "html"],
)
def test_uploads_with_hostile_names_are_refused_by_that_name(browser, server, name):
    watch = Watch(browser, server.origin)
    try:
        watch.goto(server.url(model="demo:reverse", text="abc"))
        files = upload_field(watch)
        files.set_input_files({"name": name, "mimeType": "application/octet-stream", "buffer": b"not a model" * 50})
        wait_text(watch, re.compile(matching("Could not load this model: {message}")))
        wait_idle(watch.page)
        errors = [e.replace("\u200b", "") for e in sidebar_errors(watch.page)]
        assert len(errors) == 1 and NO_FORMAT in errors[0], errors
        assert name[:40] in errors[0] or name == ".."  # its own name (a browser may send ".." as it is or not)
        for leak in ("transformer-viz-uploads", "/tmp", "Is a directory", "File name too long", "null byte"):
            assert leak not in errors[0], errors[0]
        assert (
            watch.page.locator('img[src*="127.0.0.1:9"], img[src="x"], [data-testid="stAlertContentError"] a').count()
            == 0
        )
        watch.assert_clean()
    finally:
        watch.close()
