"""The figure command (cli/figure.py): `transformer-viz figure` and `python -m cli.figure` write one view as a file;
bad input gets one error line on stderr (after argparse's usage where argparse reports it), a non-zero exit and no
traceback."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cli.main import main as transformer_viz

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def letters(tmp_path_factory):
    from harness.browser import letters_checkpoint

    return str(letters_checkpoint(tmp_path_factory.mktemp("cli_figure")))


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = transformer_viz(["figure", *argv])
    except SystemExit as stop:  # argparse's own errors
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    """The stderr of a refused command: argparse's usage lines, then exactly one 'error' line; no traceback."""
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if "error:" in line]
    assert len(lines) == 1, err
    return lines[0]


def test_the_command_writes_the_view_as_an_svg_of_the_tokens(capsys, letters, tmp_path):
    from viz.figure_export import FigureExportError, chromium_path

    try:
        chromium_path()
    except FigureExportError as err:
        pytest.skip(str(err))
    out = tmp_path / "new" / "head.svg"  # a folder that does not exist yet is made
    code, stdout, err = run(capsys, "--model", letters, "--text", "cafe", "--view", "one", "--head", "1",
                            "--out", str(out))  # fmt: skip
    assert code == 0, err
    root = ET.fromstring(out.read_bytes())
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert {"c", "a", "f", "e"} <= set(texts) and any("head 1" in t for t in texts)
    assert str(out) in stdout


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["--view", "sideways"], "--view"),  # argparse: usage, then its error line (exit 2)
        (["--view", "one", "--head", "first"], "--head"),
        (["--view", "one", "--kind", "diagonal"], "--kind"),
    ],
)
def test_argparse_names_a_bad_choice_after_its_usage(capsys, letters, tmp_path, argv, names):
    code, _, err = run(capsys, "--model", letters, "--text", "cafe", "--out", str(tmp_path / "f.svg"), *argv)
    assert code == 2 and err.startswith("usage:") and names in one_error_line(err)
    assert not (tmp_path / "f.svg").exists()


def test_an_unknown_model_a_bad_suffix_and_an_unwritable_place_are_one_line_each(capsys, letters, tmp_path):
    code, _, err = run(
        capsys, "--model", "demo:nonesuch", "--text", "x", "--view", "one", "--out", str(tmp_path / "f.svg")
    )
    assert code == 1 and "nonesuch" in one_error_line(err) and "usage:" not in err
    code, _, err = run(capsys, "--model", letters, "--text", "x", "--view", "one", "--out", str(tmp_path / "f.jpg"))
    assert code == 1 and ".svg" in one_error_line(err)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, _, err = run(capsys, "--model", letters, "--text", "x", "--view", "one", "--out", str(blocker / "f.svg"))
    assert code == 1 and one_error_line(err).startswith("error:")
    (tmp_path / "taken.svg").mkdir()
    code, _, err = run(capsys, "--model", letters, "--text", "x", "--view", "one", "--out", str(tmp_path / "taken.svg"))
    assert code == 1 and "folder" in one_error_line(err)
    code, _, err = run(capsys, "--model", letters, "--text", "cafe", "--view", "one", "--layer", "7", "--out",
                       str(tmp_path / "g.svg"))  # fmt: skip
    assert code == 1 and "layer 7" in one_error_line(err) and not (tmp_path / "g.svg").exists()


def test_python_m_cli_figure_is_the_same_command():
    run_ = subprocess.run(
        [sys.executable, "-m", "cli.figure", "--model", "demo:reverse", "--text", "x", "--view", "nope", "--out", "f.svg"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run_.returncode == 2 and run_.stderr.startswith("usage: python -m cli.figure")
    assert "--view" in one_error_line(run_.stderr)
