"""The download control under every chart (ui/shell/figure_download.py through ui/shell/presentation.show): one per chart, nothing
drawn on a page run, and the button's file drawn when it is pressed, at the format and size chosen."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from tests.apptest_helpers import charts, open_page
from ui.shell.figure_download import KEY_SUFFIX


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    from harness.browser import letters_checkpoint

    return f"path:{letters_checkpoint(tmp_path_factory.mktemp('figdl'))}"


def figure_buttons(at) -> list:
    return [b for b in at.get("download_button") if b.proto.id.endswith(f"{KEY_SUFFIX}_button")]


def test_every_chart_has_one_control_and_a_page_run_draws_no_file(ckpt, monkeypatch, deferred):
    import viz.figure_export

    drawn = []
    monkeypatch.setattr(viz.figure_export, "render", lambda *a, **k: drawn.append(a) or b"")
    for page, params in (("attention", {"att_view": "grid"}), ("decoding", {})):
        at = open_page(page, ckpt, text="cafe", **params)
        assert not at.exception, at.exception
        assert len(figure_buttons(at)) == len(charts(at)) > 0, page
    assert drawn == []  # only a press draws
    svg = deferred["att_grid.svg"]  # the grid's button, as the page registered it: pressed here
    assert drawn == [] and svg is not None


def test_pressing_the_button_draws_the_chart_at_the_chosen_format_and_size(ckpt, deferred):
    from viz.figure_export import FigureExportError, chromium_path

    try:
        chromium_path()
    except FigureExportError as err:
        pytest.skip(str(err))
    at = open_page("attention", ckpt, text="cafe", att_view="one", att_head="1")
    at.selectbox(key=f"att_one{KEY_SUFFIX}_preset").set_value("column").run()
    assert not at.exception, at.exception
    data = deferred["att_one.svg"]()
    root = ET.fromstring(data)
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert any("head 1" in t for t in texts) and {"c", "a", "f", "e"} <= set(texts)
    assert float(root.get("width")) <= 3.5 * 96 + 1  # the column's 8.9 cm
    assert not list(root.iter("{http://www.w3.org/2000/svg}image"))
