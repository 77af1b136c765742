"""Driving the app in a real headless Chromium: the browser and a watch on every page (the `streamlit run` server:
harness/app_server.py, its names importable from here too).

Shared by the tests (through tests/browser_helpers.py, which turns a missing browser into a skip, or a failure
under CI) and the benchmarks (where a missing browser is an error that says what to install). Needs Debian's
chromium (/usr/bin/chromium) and python playwright (never playwright's own browser download).

Offline is part of what is tested: `Watch` blocks every request that does not go to the local
server and records it, with page errors, console errors and failed responses; `assert_clean()`
raises on any of them.
"""

from __future__ import annotations

import contextlib
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from harness.app_server import (  # noqa: F401 - the names the tests and benchmarks import from here
    ROOT,
    STREAMLIT,
    WAIT_S,
    AppServer,
    free_port,
    healthy,
    streamlit_command,
    wait_healthy,
)

ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
# A browser with WebGPU on this machine's CPU: Chromium's own SwiftShader (Vulkan in software) stands in for a GPU, so
# that the pack's WebGPU path runs and is compared with the Python model where there is no GPU.
WEBGPU_ARGS = [
    "--enable-unsafe-webgpu",
    "--enable-features=Vulkan",
    "--use-vulkan=swiftshader",
    "--use-webgpu-adapter=swiftshader",
]
VIEWPORT = {"width": 1400, "height": 1000}
# WAIT_S (harness/app_server.py): how long a wait for a condition may take before the test fails.


class BrowserMissing(RuntimeError):
    """Chromium or playwright is not installed; the message says what to install."""


def browser_missing() -> str | None:
    """Why a browser cannot be started here, or None when Chromium and playwright are both installed."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "python playwright is not installed (pip install -r requirements-dev.txt)"
    return None


def launch_args(webgpu: bool = False) -> list[str]:
    """Chromium's command line: without a GPU, or with WebGPU on the CPU (WEBGPU_ARGS)."""
    return [a for a in LAUNCH_ARGS if a != "--disable-gpu"] + WEBGPU_ARGS if webgpu else LAUNCH_ARGS


@contextlib.contextmanager
def chromium(webgpu: bool = False) -> Iterator:
    """One headless Debian Chromium (for a test module, a benchmark); BrowserMissing when there is none.
    webgpu: with a WebGPU adapter (WEBGPU_ARGS: SwiftShader, on the CPU)."""
    reason = browser_missing()
    if reason:
        raise BrowserMissing(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=launch_args(webgpu))
        try:
            yield browser
        finally:
            browser.close()


def screenshot(page, name: str, max_height: int = 5000) -> Path:
    """Save a screenshot of the whole page under test-artifacts/ (gitignored) and return its path.

    Streamlit scrolls its main area inside the window, so a "full page" shot would stop at the
    window's edge: the window is made as tall as the content for the shot.
    """
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    size = page.viewport_size
    height = page.evaluate("""() => Math.max(document.documentElement.scrollHeight,
        ...['stMain', 'stSidebarContent'].map(id => (document.querySelector(`[data-testid="${id}"]`) || {}).scrollHeight || 0))""")
    page.set_viewport_size({"width": size["width"], "height": int(min(max(height, size["height"]), max_height))})
    try:
        page.screenshot(path=str(path), full_page=True)
    finally:
        page.set_viewport_size(size)
    return path


# ---------------------------------------------------------------------------------------------- the server


# ---------------------------------------------------------------------------------------------- one page under watch


class Watch:
    """A page in its own browser context, offline but for `origin`: what it tried, what broke.

    blocked: requests to anywhere but origin (aborted), and websockets opened to anywhere else;
    errors: uncaught page errors; console: console errors; failed: local responses with status >= 400;
    dialogs: alert/confirm texts.
    """

    def __init__(self, browser, origin: str):
        self.origin = origin
        self.context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
        self.context.set_default_timeout(WAIT_S * 1000)  # clicks and reads wait for their element as long as waits do
        self.page = self.context.new_page()
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.console: list[str] = []
        self.failed: list[str] = []
        self.dialogs: list[str] = []
        self.context.route("**/*", self._route)  # every page and frame of this context, bertviz's iframe included
        self.page.on("websocket", self._on_websocket)  # websockets pass no route: record any that leave the server
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", self._on_console)
        self.page.on("response", self._on_response)
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def _route(self, route) -> None:
        url = route.request.url
        if url == self.origin or url.startswith(self.origin + "/"):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def _on_websocket(self, socket) -> None:
        if urllib.parse.urlsplit(socket.url).netloc != urllib.parse.urlsplit(self.origin).netloc:
            self.blocked.append(socket.url)

    def _on_console(self, message) -> None:
        if message.type != "error":
            return
        self.console.append(f"{message.text} ({(message.location or {}).get('url', '')})")

    def _on_response(self, response) -> None:
        # every failed request counts: a page opened by its own address included (app.py's BasePath, streamlit#7074)
        if response.status >= 400:
            self.failed.append(f"{response.status} {response.url}")

    def goto(self, url: str, wait_until: str = "load") -> None:
        self.page.goto(url, wait_until=wait_until, timeout=WAIT_S * 1000)

    def problems(self) -> str:
        return (
            f"blocked {self.blocked}, page errors {self.errors}, console errors {self.console}, "
            f"failed responses {self.failed}, dialogs {self.dialogs}"
        )

    def tracebacks(self) -> list[str]:
        """Uncaught Python exceptions Streamlit shows on the page."""
        return self.page.locator('[data-testid="stException"]').all_inner_texts()

    def assert_clean(self) -> None:
        assert self.blocked == [], f"the page tried to go online: {self.blocked}"
        assert self.errors == [] and self.console == [] and self.failed == [] and self.dialogs == [], self.problems()
        assert self.tracebacks() == [], self.tracebacks()

    def close(self) -> None:
        self.context.close()


# ---------------------------------------------------------------------------------------------- Streamlit widgets


def _failure(watch: Watch, what: str) -> str:
    """On a failed wait: save what the page showed under test-artifacts/ and describe the page's problems."""
    name = "failure-" + re.sub(r"[^\w-]+", "_", what)[:60] + f"-{int(time.time() * 1000) % 10**8}"
    try:
        where = f"screenshot {screenshot(watch.page, name).name}; "
    except Exception as e:  # the page may be gone
        where = f"no screenshot ({e}); "
    return where + watch.problems() + f"; tracebacks {watch.tracebacks()}"


def wait_text(watch: Watch, text: str | re.Pattern, timeout_s: float = WAIT_S):
    """Wait until some element shows `text` (a substring, or a pattern); returns its locator."""
    locator = watch.page.get_by_text(text).first
    try:
        locator.wait_for(state="visible", timeout=timeout_s * 1000)
    except Exception as e:
        raise AssertionError(f"the page never showed {text!r}; {_failure(watch, f'text {text}')}") from e
    return locator


def wait_idle(page, timeout_s: float = WAIT_S) -> None:
    """Wait until the script is not running and the connection is up (after a load)."""
    page.locator(
        '[data-testid="stApp"][data-test-script-state="notRunning"][data-test-connection-state="CONNECTED"]'
    ).wait_for(state="attached", timeout=timeout_s * 1000)


def input_box(page):
    return page.get_by_role("textbox", name="Input text (source)", exact=True)


def wait_value(watch: Watch, locator, value: str, what: str, timeout_s: float = WAIT_S) -> None:
    """Wait until an input shows `value`: after a load the sidebar can still be redrawn once the chart is there
    (Streamlit re-sends it when a run follows the one that drew the chart). On a timeout, say what it showed."""
    from playwright.sync_api import expect

    try:
        expect(locator).to_have_value(value, timeout=timeout_s * 1000)  # the locator is found again at each try
    except AssertionError as e:
        try:
            shown = repr(locator.input_value(timeout=1000))
        except Exception:
            shown = "nothing"
        raise AssertionError(
            f"{what} never showed {value!r} (it shows {shown}) at {watch.page.url}; {_failure(watch, what)}"
        ) from e


def type_input(page, text: str) -> None:
    """Replace the sidebar's input text and submit it (Ctrl+Enter), as a person would."""
    box = input_box(page)
    box.fill(text)
    box.press("Control+Enter")


def escalating_timeouts(total_s: float = WAIT_S, first_s: float = 10.0) -> list[float]:
    """Timeouts (s) for the tries of a person's action that a rerun can spoil: short at first (a spoiled try is
    seen and repeated soon), doubling, and together at most total_s (10, 20, 40, 80, 90 for 240 s)."""
    out, step, left = [], first_s, total_s
    while left > 0:
        out.append(min(step, left))
        left -= out[-1]
        step *= 2
    return out


def choose(page, label: str, option: str) -> None:
    """Pick `option` in the selectbox labelled `label`, once the last run is over.

    The box is scrolled into view first: a click that scrolls the page's main area to a box below the fold
    lands before the box has settled, and the list stays closed. Under heavy load a rerun that lands while
    the list is open closes it, and the option never shows: the person opens the list again (the condition
    is the option present), with ever longer waits (escalating_timeouts)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    tries = escalating_timeouts()
    for i, timeout_s in enumerate(tries):
        wait_idle(page)
        box = page.get_by_role("combobox", name=label, exact=True)
        box.scroll_into_view_if_needed(timeout=WAIT_S * 1000)
        box.click(timeout=WAIT_S * 1000)
        try:
            page.get_by_role("option", name=option, exact=True).click(timeout=timeout_s * 1000)
            return
        except PlaywrightTimeout:
            if i == len(tries) - 1:
                raise
            page.keyboard.press("Escape")


def press_pill(page, container: str, name: str) -> None:
    """Select the pill `name` in the pills inside `container` (a CSS selector), as a person would: click it once
    the last run is over, and click again only while it is still not selected (a rerun that lands between the
    click and its message can drop the click; a second click on a pill already selected would undo it)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    box = page.locator(container)
    active = box.get_by_role("button", name=name, exact=True, pressed=True)
    tries = escalating_timeouts()
    for i, timeout_s in enumerate(tries):
        wait_idle(page)
        if active.count():
            return
        box.get_by_role("button", name=name, exact=True).click(timeout=WAIT_S * 1000)
        try:
            active.wait_for(state="attached", timeout=timeout_s * 1000)
            return
        except PlaywrightTimeout:
            if i == len(tries) - 1:
                raise


def download(page, button: str | re.Pattern) -> bytes:
    """Click a download button once the script run is over, and return the bytes the browser received.

    Call it after something on the page showed that the last change was taken up: the button comes
    late in the page, and until the run ends it may still serve the previous run's data.
    """
    wait_idle(page)
    with page.expect_download(timeout=WAIT_S * 1000) as info:
        page.get_by_role("button", name=button, exact=isinstance(button, str)).click()
    path = info.value.path()
    return Path(path).read_bytes()


def upload_field(watch: Watch):
    """The sidebar's checkpoint upload field (its file input), the model picker switched to uploading."""
    choose(watch.page, "Model", "Upload a checkpoint…")
    wait_text(watch, "Choose a model in the sidebar to begin.")
    return watch.page.locator('[data-testid="stSidebar"] [data-testid="stFileUploader"] input[type="file"]')


def sidebar_errors(page) -> list[str]:
    return page.locator('[data-testid="stSidebar"] [data-testid="stAlertContentError"]').all_inner_texts()


# ---------------------------------------------------------------------------------------------- a model to look at


LETTERS_CARD = {"task": "letters", "description": "random letters", "examples": ["abcdefgh", "cafe", "head"]}


def letters_checkpoint(
    folder: Path, card: dict | None = None, letters: str = "abcdefgh", name: str = "letters", **config
) -> Path:
    """A small random char-level model (letters a-h), max_len 12 (11 tokens and </s>): 2 encoder and 3 decoder
    layers of 2 heads (`config` changes them, `letters` the vocabulary), saved as folder/name; its card has
    examples (LETTERS_CARD unless another card is given)."""
    from model import Tokenizer, TransformerConfig, Vocab, build_model, save_checkpoint

    vocab = Vocab.build(letters, level="char")
    sizes = {"max_len": 12, "n_heads": 2, "n_encoder_layers": 2, "n_decoder_layers": 3, **config}
    config = TransformerConfig.preset("tiny", src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), **sizes)
    path = folder / name
    save_checkpoint(
        build_model(config, seed=0),
        Tokenizer(vocab, vocab),
        path,
        card=LETTERS_CARD if card is None else card,
    )
    return path


def pick_view(page, name: str) -> None:
    """Click the segment `name` of a page's view selector (st.segmented_control), once the last run is over."""
    wait_idle(page)
    page.get_by_role("radiogroup", name="View", exact=True).get_by_role("radio", name=name, exact=True).click(
        timeout=WAIT_S * 1000
    )


# ---------------------------------------------------------------------------------------------- lecture layout

PROJECTOR = {"width": 1366, "height": 768}


def wait_url(watch: Watch, *parts: str, timeout_s: float = WAIT_S) -> None:
    """Wait until the address bar (decoded) holds every one of `parts` (e.g. "att_view=grid"), then the run is over."""
    try:
        watch.page.wait_for_function(
            "parts => { const url = decodeURIComponent(location.href.replace(/\\+/g, ' ')); "
            "return parts.every(p => url.includes(p)); }",
            arg=list(parts),
            timeout=timeout_s * 1000,
        )
    except Exception as e:
        raise AssertionError(f"the URL never held {parts}: it is {watch.page.url}; {_failure(watch, 'url')}") from e
    wait_idle(watch.page, timeout_s)


# ----------------------------------------------------------------------------------------------


def pick_segment(page, group: str, name: str) -> None:
    """Click the segment `name` of the segmented control labelled `group` (e.g. "Strategy"), once the last run is over."""
    wait_idle(page)
    page.get_by_role("radiogroup", name=group, exact=True).get_by_role("radio", name=name, exact=True).click(
        timeout=WAIT_S * 1000
    )


# ---------------------------------------------------------------------------------------------- Chinese


def sidebar_nav_texts(page) -> list[str]:
    """The page titles in the sidebar's navigation, as shown (without the icon, whose name is its text)."""
    links = page.locator('[data-testid="stSidebarNav"] a').all_inner_texts()
    return [t.strip().splitlines()[-1].strip() if t.strip() else "" for t in links]
