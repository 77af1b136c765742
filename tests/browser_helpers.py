"""The browser harness for pytest: everything in harness/browser.py (with app_server.py), charts.py and
view_checks.py, with a missing browser made a skip.

Without Debian's chromium or python playwright a browser test skips, except under CI (the CI variable
set), where it fails. The benchmarks use harness.browser directly (there a missing browser is an error).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest

from harness import browser as _browser
from harness.browser import *  # noqa: F403
from harness.browser import _failure, browser_missing  # noqa: F401
from harness.charts import *  # noqa: F403
from harness.charts import _FIND_PLOT  # noqa: F401
from harness.view_checks import *  # noqa: F403


def need_browser() -> None:
    """Skip (fail under CI) when Chromium or playwright is missing."""
    reason = browser_missing()
    if reason and os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must provide it")
    if reason:
        pytest.skip(reason)


@contextlib.contextmanager
def chromium() -> Iterator:
    """One headless Debian Chromium for a module's tests (skips, or fails under CI, without one)."""
    need_browser()
    with _browser.chromium() as browser:
        yield browser


_STATE = """() => [...document.querySelectorAll('body, [data-drawn], [data-shown], [data-step], [data-warm]')]
    .map(e => `${e.tagName.toLowerCase()}#${e.id}.${e.className}: ${JSON.stringify(e.dataset)}`).join('\\n')"""


def wait_until(page, expression: str, errors: list[str], timeout: int = 120_000) -> None:
    """page.wait_for_function, and on a timeout an AssertionError that shows the page's errors and its elements'
    data attributes (what a CI log needs to tell a hang from a failure)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(expression, timeout=timeout)
    except PlaywrightTimeout:
        try:
            state = page.evaluate(_STATE)
        except Exception as exc:  # noqa: BLE001 - the page may be gone; say so
            state = f"(page state unreadable: {exc})"
        raise AssertionError(f"not true after {timeout} ms: {expression}\npage errors: {errors}\n{state}") from None
