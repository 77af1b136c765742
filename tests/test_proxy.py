"""Two app processes behind nginx (deploy/nginx_conf.py), sticky per visitor: four browser sessions and an upload.

nginx runs in the foreground with its own prefix (pid, logs, temp files under tmp_path) on a free
loopback port; the app processes are two `streamlit run app.py` on their own free ports. Which process
holds a session is read from the processes themselves: a session's websocket stays open, so each
process's established connections on its port are the sessions it serves.
"""

from __future__ import annotations

import contextlib
import os
import zipfile

import pytest

from deploy.nginx_conf import COOKIE
from harness.proxy import NGINX, Proxy
from tests.browser_helpers import (
    AppServer,
    Watch,
    chromium,
    letters_checkpoint,
    type_input,
    upload_field,
    wait_ticks,
)

TEXTS = ["a", "hb", "cgd", "dace"]  # round-robin: two sessions on each process


def source(text: str) -> list[str]:
    return [*text, "</s>"]


def sessions_held(server: AppServer) -> int:
    """Established TCP connections to the server's port: its open websockets (nginx keeps no idle HTTP ones)."""
    import psutil

    return sum(
        1
        for c in psutil.Process(server.process.pid).net_connections(kind="tcp")
        if c.status == psutil.CONN_ESTABLISHED and c.laddr and c.laddr.port == server.port
    )


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def deployment(tmp_path_factory, browser):
    if not os.path.exists(NGINX):
        if os.environ.get("CI"):
            pytest.fail("nginx is missing; CI must provide it (scripts/setup.sh --dev installs it)")
        pytest.skip("nginx is missing (apt-get install -y nginx, or scripts/setup.sh --dev)")
    tmp = tmp_path_factory.mktemp("proxy")
    servers, proxy = [], None
    try:
        for i in range(2):
            (tmp / f"app{i}").mkdir()
            servers.append(AppServer(tmp / f"app{i}"))
            servers[-1].first_visit(browser)
        proxy = Proxy(tmp, [f"127.0.0.1:{s.port}" for s in servers])
        yield servers, proxy
    finally:
        if proxy is not None:
            proxy.stop()
        for s in servers:
            s.stop()


def test_four_sessions_spread_over_two_processes_and_each_sees_its_own_input(browser, deployment, tmp_path):
    servers, proxy = deployment
    letters = letters_checkpoint(tmp_path)
    watches = [Watch(browser, proxy.origin) for _ in TEXTS]
    try:
        for w, text in zip(watches, TEXTS):
            w.goto(f"{proxy.origin}/?model=path:{letters}&text={text}&att_kind=encoder_self", wait_until="commit")
        for w, text in zip(watches, TEXTS):
            wait_ticks(
                w,
                source(text),
                source(text),
            )
        held = [sessions_held(s) for s in servers]
        assert sum(held) == len(TEXTS) and min(held) >= 1, held  # both processes serve some sessions
        cookies = [{c["name"]: c["value"] for c in w.context.cookies()}.get(COOKIE) for w in watches]
        assert set(cookies) == {"tv_0", "tv_1"}, cookies  # each visitor was told which process holds it
        assert cookies.count("tv_0") == held[0] and cookies.count("tv_1") == held[1], (cookies, held)

        # Each session types something new; each still sees its own (the websocket stayed with its process).
        for w, text in zip(watches, reversed(TEXTS)):
            w.page.get_by_role("textbox", name="Input text (source)", exact=True).fill(text)
            w.page.get_by_role("textbox", name="Input text (source)", exact=True).press("Control+Enter")
        for w, text in zip(watches, reversed(TEXTS)):
            wait_ticks(
                w,
                source(text),
                source(text),
            )
        for w in watches:
            w.assert_clean()
    finally:
        for w in watches:
            w.close()


def test_an_upload_through_the_proxy_reaches_the_session_s_process(browser, deployment, tmp_path):
    servers, proxy = deployment
    letters = letters_checkpoint(tmp_path)
    archive = tmp_path / "letters.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in letters.iterdir():
            z.write(f, f"letters/{f.name}")
    watches = [Watch(browser, proxy.origin) for _ in servers]  # round-robin: one session on each process
    try:
        for w in watches:
            w.goto(f"{proxy.origin}/?text=cafe")
            upload_field(w).set_input_files(str(archive))
            wait_ticks(w, source("abcdefgh"))  # the uploaded model starts from its card's first example
            type_input(w.page, "cafe")
            wait_ticks(w, source("cafe"))  # and reads what the session types
        cookies = {({c["name"]: c["value"] for c in w.context.cookies()}.get(COOKIE)) for w in watches}
        assert cookies == {"tv_0", "tv_1"}, cookies  # one upload went to each process
        for w in watches:
            w.assert_clean()
    finally:
        for w in watches:
            with contextlib.suppress(Exception):
                w.close()
