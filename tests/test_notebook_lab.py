"""The notebook widget in a real JupyterLab, in Chromium: a local server (127.0.0.1, a token) on a copy of a small
notebook, its cells run from the page, the widget drawn by its bundled front end, a click in the overview that
selects a layer and a head (seen on the page and by the kernel), and every request the page makes kept on the
server: none leaves 127.0.0.1. Skips where jupyterlab is not installed (requirements-dev.txt has it)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP = f"""import sys
sys.path.insert(0, {str(ROOT)!r})
from model import load_checkpoint
from model.checkpoints.demos import list_demos
from viz.notebook import show

model, tokenizer = load_checkpoint({{d.name: d for d in list_demos()}}["reverse"].path)
widget = show(model, tokenizer, "abc", kind="encoder_self", layer=0)
widget"""
READ_BACK = "print('selection', widget.view, widget.layer, widget.head)"


def _notebook(folder: Path) -> str:
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SETUP), nbformat.v4.new_code_cell(READ_BACK)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, folder / "widget.ipynb")
    return "widget.ipynb"


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """`jupyter lab` on a free local port, with a token, its root a temporary folder holding the notebook; no
    update check, no news feed, settings and workspaces in the temporary folder."""
    pytest.importorskip("jupyterlab")
    from harness.browser import WAIT_S, free_port

    folder = tmp_path_factory.mktemp("lab")
    home = folder / "home"
    (home / "runtime").mkdir(parents=True)
    (home / "config").mkdir()
    # the language servers' extension scans for servers at start: nothing this test needs
    (home / "config" / "jupyter_server_config.json").write_text(
        '{"ServerApp": {"jpserver_extensions": {"jupyter_lsp": false}}}'
    )
    name = _notebook(folder)
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "PYTHONUNBUFFERED": "1",
    }
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={folder}", "--ServerApp.port_retries=0",
        "--allow-root", "--ServerApp.terminals_enabled=False", "--LabApp.extension_manager=readonly",
        "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]  # fmt: skip
    log = open(folder / "lab.log", "wb")
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
    origin = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT_S
        while not _answers(f"{origin}/api/status?token={token}") and process.poll() is None:
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)  # polling the server's status until it answers
        if process.poll() is not None or not _answers(f"{origin}/api/status?token={token}"):
            pytest.fail(f"jupyter lab did not start:\n{(folder / 'lab.log').read_text(errors='replace')[-3000:]}")
        yield origin, f"{origin}/lab/tree/{name}?token={token}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()


def _watch_kernel(ws, idle: list[bool]) -> None:
    """Note in `idle` when the notebook's kernel websocket carries an idle status (the kernel is connected)."""
    if "/api/kernels/" in ws.url:
        ws.on("framereceived", lambda frame: _idle_status(frame, idle))


def _idle_status(frame, idle: list[bool]) -> None:
    data = frame if isinstance(frame, bytes) else str(frame).encode()
    if b'"execution_state"' in data and b'"idle"' in data:
        idle.append(True)


def _run_cell(page, index: int) -> None:
    """Run the notebook's cell `index` as a person does: click into it, Shift+Enter."""
    page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")


def test_the_widget_draws_in_jupyterlab_and_a_click_reaches_the_kernel_with_no_request_outside(lab):
    from harness.browser import WAIT_S, Watch
    from tests.browser_helpers import chromium

    origin, url = lab
    with chromium() as browser:
        watch = Watch(browser, origin)  # every request not to the local server is aborted and recorded
        requests: list[str] = []
        idle: list[bool] = []  # the kernel said it is idle, on its websocket: a cell run now is not dropped
        page = watch.page
        page.on("request", lambda r: requests.append(r.url))
        page.on("websocket", lambda ws: _watch_kernel(ws, idle))
        try:
            watch.goto(url)
            deadline = time.monotonic() + WAIT_S
            while not idle:
                assert time.monotonic() < deadline, f"the kernel never said it is idle; {watch.problems()}"
                page.wait_for_timeout(100)  # polling the recorded frames (events are delivered while waiting)
            _run_cell(page, 0)
            drawn = page.locator(".jp-OutputArea .tv-root[data-draws] svg rect")
            drawn.first.wait_for(timeout=WAIT_S * 1000)
            root = page.locator(".jp-OutputArea .tv-root")
            assert [root.get_attribute(a) for a in ("data-view", "data-layer", "data-head")] == ["head", "0", "-1"]
            assert drawn.count() == 4 * 4  # "abc" and </s>: one 4 x 4 map, every cell drawn
            page.locator(".jp-OutputArea .tv-root button[data-view='model']").click()
            pick = page.locator(".jp-OutputArea .tv-pick[data-layer='1'][data-head='2']")
            pick.click()
            page.locator(".jp-OutputArea .tv-root[data-view='head'][data-layer='1'][data-head='2']").wait_for(
                timeout=WAIT_S * 1000
            )
            _run_cell(page, 1)  # the kernel's widget has the selection the click made
            page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea-output").get_by_text(
                "selection head 1 2", exact=True
            ).wait_for(timeout=WAIT_S * 1000)
        finally:
            blocked, errors = list(watch.blocked), list(watch.errors)
            watch.close()
    outside = [u for u in requests if not u.startswith((origin + "/", "data:", "blob:", "about:"))]
    assert requests and outside == [] and blocked == [], (outside, blocked)
    assert errors == [], errors
