"""Serve the app: `streamlit run` on the app.py installed beside this package, with the project's settings.

    {prog}                                        # http://localhost:8501
    {prog} --port 8600 --address 0.0.0.0          # a room on the local network
    {prog} -- --allow-folder /srv/models          # visitors may open checkpoints in /srv/models
    {prog} --server.maxUploadSize 100             # any other Streamlit option, passed on as given

Options after `--` belong to the app, as with `streamlit run app.py -- ...` (docs/serving.md):
  --allow-folder DIR   a folder whose checkpoints visitors may open by path (repeatable; also
                       TRANSFORMER_VIZ_FOLDERS=DIR:DIR)

The repository's .streamlit/config.toml is read by `streamlit run` only from the folder it starts in; an
installed copy runs anywhere, so the same settings are given as flags (usage statistics off, no request
for the machine's external address, no e-mail prompt, no file watcher, the minimal toolbar). Flags given
here come after them and win.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

# app.py sits beside the cli package: in the repository at its root, after `pip install .` in site-packages.
APP = Path(__file__).resolve().parents[1] / "app.py"

# The settings of .streamlit/config.toml, section by section (tests/test_install.py checks they are equal).
SETTINGS: dict[str, dict[str, object]] = {
    "browser": {"gatherUsageStats": False, "serverAddress": "localhost"},
    "server": {
        "showEmailPrompt": False,
        "fileWatcherType": "none",
        "folderWatchBlacklist": [".venv", "checkpoints", "test-artifacts", ".git"],
    },
    "client": {"toolbarMode": "minimal"},
}


def settings_flags(settings: dict[str, dict[str, object]] = SETTINGS) -> list[str]:
    """`--section.option value` for every setting (a list gives its option once per item, as Streamlit takes it)."""
    flags = []
    for section, options in settings.items():
        for name, value in options.items():
            for item in value if isinstance(value, list) else [value]:
                text = str(item).lower() if isinstance(item, bool) else str(item)
                flags += [f"--{section}.{name}", text]
    return flags


def streamlit_command(argv: Sequence[str], prog: str = "transformer-viz serve") -> tuple[list[str], bool]:
    """The `python -m streamlit run` command line for this command's arguments, and whether only to print it
    (argparse errors exit 2)."""
    argv = list(argv)
    app_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(
        prog=prog,
        usage=f"{prog} [--port PORT] [--address ADDRESS] [--print-command] [STREAMLIT_OPTION ...] [-- APP_OPTION ...]",
        description=__doc__.format(prog=prog),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--port", type=int, help="the port to listen on (Streamlit's default: 8501)")
    parser.add_argument("--address", help="the address to listen on (Streamlit's default: every interface)")
    parser.add_argument(
        "--print-command", action="store_true", help="print the streamlit command instead of running it"
    )
    args, streamlit_args = parser.parse_known_args(own)
    if streamlit_args and not (streamlit_args[0].startswith("--") and "." in streamlit_args[0]):
        parser.error(f"not an option of this command nor a Streamlit option (--section.name): {streamlit_args[0]}")
    if not APP.is_file():
        parser.error(f"the app is not installed beside this command: {APP} is missing")
    command = [sys.executable, "-m", "streamlit", "run", str(APP), *settings_flags()]
    if args.port is not None:
        command += ["--server.port", str(args.port)]
    if args.address:
        command += ["--server.address", args.address]
    command += streamlit_args
    if app_args:
        command += ["--", *app_args]
    return command, args.print_command


def main(argv: Sequence[str] | None = None, prog: str = "transformer-viz serve") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command, only_print = streamlit_command(argv, prog)
    if only_print:
        print(shlex.join(command))
        return 0
    sys.stdout.flush()
    os.execv(sys.executable, command)  # the server takes this process over: signals reach it directly
    return 0  # not reached
