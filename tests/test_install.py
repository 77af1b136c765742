"""`pip install .` gives a working library and the `transformer-viz` command, away from the repository.

A wheel is built from a copy of the working tree with the shared venv's setuptools (no build isolation, no
package index: offline) and installed without dependencies into a fresh venv. That venv sees the shared venv's
packages (torch, streamlit, ...) through a .pth line: `--system-site-packages` gives only the base interpreter's.
Every check runs in an empty temporary folder with PYTHONPATH unset, so the repository is not on sys.path and
whatever works, works from the installed copy.
"""

from __future__ import annotations

import asyncio
import contextlib
import gettext
import os
import shutil
import signal
import site
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from cli.serve import SETTINGS, settings_flags
from harness.browser import free_port, wait_healthy
from harness.stream_client import StreamSession
from model import greedy_decode, load_checkpoint
from model.checkpoints.checkpoint import load_card
from model.checkpoints.demos import list_demos
from tests.test_lecture_pack import pack_data

ROOT = Path(__file__).resolve().parents[1]
LIMIT_S = float(os.environ.get("E2E_WAIT_S", 240))
NOT_SHIPPED = ("tests/", "benchmarks/", "scripts/", "harness/", "docs/", "deploy/")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("install")
    source = base / "src"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "test-artifacts", "build", "*.egg-info"),
    )
    run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q"]
        + ["-w", str(base / "dist"), str(source)],
        cwd=base,
    )
    (wheel,) = (base / "dist").glob("transformer_viz-*.whl")
    venv = base / "venv"
    run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], cwd=base)
    python = venv / "bin" / "python"
    target = Path(run([str(python), "-c", "import site; print(site.getsitepackages()[0])"], cwd=base).strip())
    shared = Path(site.getsitepackages()[0]).resolve()
    (target / "shared_venv.pth").write_text(f"import site; site.addsitedir({str(shared)!r})\n")
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)])
    work = base / "work"
    work.mkdir()
    return {"wheel": wheel, "python": python, "command": venv / "bin" / "transformer-viz", "site": target, "cwd": work}


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")} | {"PYTHONNOUSERSITE": "1"}


def run(command: list[str], cwd: Path | None = None, check: bool = True) -> str:
    done = subprocess.run(command, cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=LIMIT_S)
    if check:
        assert done.returncode == 0, (
            f"{command[:4]}... exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        )
    return done.stdout


def test_the_wheel_holds_the_library_the_app_and_the_demos(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    expected = {
        "app.py",
        "app_script.py",
        "cli/main.py",
        "cli/pack.py",
        "cli/figure.py",
        "cli/serve.py",
        "model/__init__.py",
        "viz/__init__.py",
    }
    expected |= {str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py")}
    expected |= {str(p.relative_to(ROOT)) for p in (ROOT / "i18n" / "locale").rglob("*.mo")}
    expected |= {str(p.relative_to(ROOT)) for p in (ROOT / "viz").glob("*.js")} | {
        str(p.relative_to(ROOT)) for p in (ROOT / "pack" / "static").glob("*.*")
    }
    expected |= {
        str(p.relative_to(ROOT)) for p in (ROOT / "pack" / "static" / "vendor").rglob("*") if p.is_file()
    }  # the pack's
    expected |= {str(p.relative_to(ROOT)) for p in (ROOT / "checkpoints").rglob("*") if p.is_file()}
    for package in ("ui", "tasks"):  # the app-side and demo-task packages of the new layout, once they exist
        expected |= {str(p.relative_to(ROOT)) for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts}
    assert sorted(expected - names) == []
    assert any(n.startswith("checkpoints/translate/snapshots/step-") for n in names)
    assert sorted(n for n in names if n.startswith(NOT_SHIPPED)) == []


def test_the_command_and_each_subcommand_explain_themselves(installed):
    command, cwd = str(installed["command"]), installed["cwd"]
    top = run([command, "--help"], cwd)
    assert top.startswith("usage: transformer-viz") and all(
        name in top for name in ("serve", "pack", "train", "figure")
    )
    assert run([command, "serve", "--help"], cwd).startswith("usage: transformer-viz serve")
    assert run([command, "pack", "--help"], cwd).startswith("usage: transformer-viz pack")
    assert run([command, "figure", "--help"], cwd).startswith("usage: transformer-viz figure")
    train = run([command, "train", "--help"], cwd)
    assert "python -m model.train" in train and "--task" in train and "--out" in train
    wrong = subprocess.run([command, "nonsense"], cwd=cwd, env=clean_env(), capture_output=True, text=True)
    assert wrong.returncode == 2 and "invalid choice" in wrong.stderr


# Runs in the installed venv from an empty folder: the library, its demos and its catalogs, all from site-packages.
_LIBRARY_CHECK = """
import json, os, sys
import i18n, model, viz
from model import greedy_decode, load_checkpoint
from model.checkpoints.demos import list_demos
from viz.attention_figs import token_labels
demos = {d.name: d for d in list_demos()}
net, tokenizer = load_checkpoint(demos["reverse"].path)
text = demos["reverse"].examples[0]
print(json.dumps({
    "files": [model.__file__, viz.__file__, i18n.__file__, str(demos["reverse"].path)],
    "demos": sorted(demos),
    "text": text,
    "decoded": greedy_decode(net, tokenizer, text).text,
    "zh": i18n.translations("zh").gettext("Lecture pack"),
    "path": [os.path.realpath(p) for p in sys.path],
}))
"""


def test_the_library_works_from_an_installed_copy(installed):
    import json

    report = json.loads(run([str(installed["python"]), "-c", _LIBRARY_CHECK], installed["cwd"]).splitlines()[-1])
    site_dir = installed["site"]
    assert all(Path(f).is_relative_to(site_dir) for f in report["files"]), report["files"]
    assert str(ROOT) not in report["path"] and str(installed["cwd"].resolve()) in report["path"]
    assert report["demos"] == sorted(d.name for d in list_demos())  # every shipped demo found beside the code
    net, tokenizer = load_checkpoint(ROOT / "checkpoints" / "reverse")
    assert report["decoded"] == greedy_decode(net, tokenizer, report["text"]).text != ""
    assert report["zh"] == repo_zh("Lecture pack") != "Lecture pack"


def repo_zh(msgid: str) -> str:
    with open(ROOT / "i18n" / "locale" / "zh" / "LC_MESSAGES" / "messages.mo", "rb") as f:
        return gettext.GNUTranslations(f).gettext(msgid)


def test_pack_writes_a_lecture_pack_for_a_demo(installed):
    out = installed["cwd"] / "pack-zh.html"
    args = ["pack", "--model", "reverse", "--input", "abc", "--lang", "zh", "--out", out.name]
    said = run([str(installed["command"]), *args], installed["cwd"])
    assert "1 inputs" in said and out.name in said
    page = out.read_text(encoding="utf-8")
    (item,) = pack_data(page)["inputs"]
    net, tokenizer = load_checkpoint(ROOT / "checkpoints" / "reverse")
    assert item["decoding"]["output"] == greedy_decode(net, tokenizer, "abc").text != ""
    assert repo_zh("Lecture pack") in page  # the installed catalog translated the pack


def test_train_trains_a_demo_task_from_the_installed_copy(installed):
    out = installed["cwd"] / "tiny-reverse"
    args = [
        "train",
        "--task",
        "reverse",
        "--out",
        out.name,
        "--d-model",
        "32",
        "--d-ff",
        "32",
        "--steps",
        "3",
        "--train-size",
        "64",
    ]
    args += ["--eval-every", "3", "--eval-examples", "5", "--report-examples", "5", "--no-progress", "--threads", "1"]
    said = run([str(installed["command"]), *args], installed["cwd"])
    assert f"saved {out.name}" in said
    net, tokenizer = load_checkpoint(out)  # what the installed command wrote opens here
    assert load_card(out)["task"] == "reverse" and net.config.d_model == 32  # the option reached training


def test_serve_runs_the_installed_app_with_the_projects_settings(installed):
    assert SETTINGS == tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())  # every setting copied
    command, cwd = str(installed["command"]), installed["cwd"]
    port = free_port()
    own = ["serve", "--port", str(port), "--address", "127.0.0.1", "--server.headless", "true"]
    app_args = ["--", "--allow-folder", str(cwd)]  # the app's own options, after --
    printed = run([command, *own, "--print-command", *app_args], cwd)
    app = str(installed["site"] / "app.py")
    assert f" run {app} " in printed and " ".join(settings_flags()) in printed
    assert printed.rstrip().endswith(f"-- --allow-folder {cwd}")

    log = open(cwd / "serve.log", "wb")
    server = subprocess.Popen(
        [command, *own, *app_args],
        cwd=cwd,
        env=clean_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        assert wait_healthy(f"http://127.0.0.1:{port}", server, LIMIT_S), (cwd / "serve.log").read_text()[-3000:]
        session, drawn = asyncio.run(open_default_page(f"http://127.0.0.1:{port}"))
        assert drawn.drew(""), (drawn, (cwd / "serve.log").read_text()[-3000:])
        assert session.config.gather_usage_stats is False  # True when the settings are not given
        assert session.config.toolbar_mode == session.config.MINIMAL
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()


async def open_default_page(origin: str):
    async with StreamSession(origin) as session:
        drawn = await session.open("", model="reverse", text="stressed")
    return session, drawn
