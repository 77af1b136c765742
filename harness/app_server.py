"""A `streamlit run app.py` server for the tests and benchmarks: a free port, the health check, the command (with
every thread's stack on SIGUSR1) and AppServer, in its own process group. harness/browser.py drives pages on it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# How long a wait for a condition may take before the test fails. Every wait is for a condition (a chart drawn,
# the script run over), never a fixed time, so a generous limit costs nothing when things go well; it is what a
# shared CI machine with other work on it (load average 30 and more) needs. E2E_WAIT_S overrides it.
WAIT_S = float(os.environ.get("E2E_WAIT_S", 240))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(origin: str) -> bool:
    """Whether a Streamlit server at `origin` answers its health check."""
    try:
        with urllib.request.urlopen(origin + "/_stcore/health", timeout=5) as r:
            return r.status == 200 and r.read().strip() == b"ok"
    except (urllib.error.URLError, OSError):
        return False


def wait_healthy(origin: str, process: subprocess.Popen, timeout_s: float) -> bool:
    """Poll the server's health check until it answers (True), or its process exits or timeout_s passes (False)."""
    deadline = time.monotonic() + timeout_s
    while not healthy(origin):
        if process.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


# `python -m streamlit`, with every thread's stack written to the log on SIGUSR1 (AppServer.threads: what a stalled
# run waits on, in a failed test's message)
STREAMLIT = ("import faulthandler, signal; faulthandler.register(signal.SIGUSR1, all_threads=True); "
             "from streamlit.web.cli import main; main(prog_name='streamlit')")  # fmt: skip


def streamlit_command(port: int, watcher: str = "none") -> list[str]:
    """`streamlit run app.py` headless on 127.0.0.1:port, with this file watcher ("none": a server that serves)."""
    return [sys.executable, "-c", STREAMLIT, "run", "app.py", "--server.headless", "true",
            "--server.port", str(port), "--server.address", "127.0.0.1", "--server.fileWatcherType", watcher]  # fmt: skip


class AppServer:
    """`streamlit run app.py` headless on a free local port, in its own process group.

    Usage statistics are not switched off here: the app's .streamlit/config.toml must do that, so the
    suite also proves that a plain `streamlit run app.py` stays offline. Uploads land in `tmp`.
    """

    def __init__(self, tmp: Path, startup_s: float = WAIT_S, root: Path = ROOT):
        """root: the checkout whose app.py runs (another one: a benchmark's baseline)."""
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp / "streamlit.log"
        env = {**os.environ, "TMPDIR": str(tmp), "PYTHONUNBUFFERED": "1"}
        command = streamlit_command(self.port)
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            command, cwd=root, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        if not wait_healthy(self.origin, self.process, startup_s):
            self.stop()
            raise RuntimeError(f"streamlit did not start (exit {self.process.returncode}):\n{self.log()}")

    def first_visit(self, browser) -> None:
        """Open the app's root once, as the first person after a start does.

        Until app.py has run once, Streamlit reads pages/ as an old-style page folder (ui/shell/navigation.py
        reruns such a visit through app.py). The tests start from a server someone has opened;
        test_e2e_browser checks links as the first visit on a fresh server.
        """
        context = browser.new_context()
        try:
            context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(self.origin + "/") else r.abort())
            page = context.new_page()
            page.goto(self.url(), wait_until="load", timeout=WAIT_S * 1000)
            page.locator('[data-testid="stSidebarNav"]').wait_for(timeout=WAIT_S * 1000)  # st.navigation has run
        finally:
            context.close()

    def healthy(self) -> bool:
        return healthy(self.origin)

    def url(self, page: str = "", **params: str) -> str:
        """The address of a page (attention, positional, decoding, model; "" for the default) with URL parameters."""
        query = urllib.parse.urlencode(params)
        return f"{self.origin}/{page}" + (f"?{query}" if query else "")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def threads(self, wait_s: float = 5) -> str:
        """Every thread's stack in the server now (faulthandler, on SIGUSR1), from its log: why a run stalls."""
        start = self.log_path.stat().st_size
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGUSR1)
        deadline = time.monotonic() + wait_s
        while True:
            dump = self.log_path.read_bytes()[start:].decode(errors="replace")
            if ("most recent call first" in dump and " in <module>\n" in dump) or time.monotonic() > deadline:
                return dump  # complete once the main thread's stack, written last, is there
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self._log.close()
