"""The notebook widget (viz/notebook.py and its front end viz/notebook_widget.js): the data it draws, the static
picture a saved notebook keeps, the front end in Chromium with every outside request blocked (hover, a click that
selects layer and head), and the example notebook docs/notebook.ipynb run by nbclient in a real kernel."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from viz.notebook import ESM, attention_widget, static_svg, widget_data

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "notebook.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    from harness.browser import letters_checkpoint
    from model import capture, greedy_decode, load_checkpoint

    model, tokenizer = load_checkpoint(letters_checkpoint(tmp_path_factory.mktemp("notebook")))
    return capture(model, tokenizer, "cafe"), greedy_decode(model, tokenizer, "cafe")


def test_the_widget_data_is_every_kind_of_the_capture_and_the_steps(records):
    cap, trace = records
    data = widget_data(cap, trace)
    assert list(data["kinds"]) == ["cross", "decoder_self", "encoder_self"]
    for kind, kd in data["kinds"].items():
        w = np.array(kd["weights"], dtype=np.float64)
        assert w.shape == getattr(cap, kind).shape and np.allclose(w, getattr(cap, kind), atol=5e-5)
        assert len(kd["rows"]) == w.shape[2] and len(kd["keys"]) == w.shape[3]
    assert data["kinds"]["encoder_self"]["keys"] == ["c", "a", "f", "e", "</s>"]
    steps = np.array(data["decoding"]["weights"], dtype=np.float64)
    assert np.allclose(steps, trace.cross_alignment(), atol=5e-5)
    assert [r.split(" → ")[-1] for r in data["decoding"]["rows"]] == trace.output_tokens
    json.dumps(data)  # JSON as it is


def test_a_saved_notebook_keeps_a_static_picture_of_the_head_view(records):
    cap, trace = records
    widget = attention_widget(cap, trace, kind="encoder_self", layer=0)
    bundle, _meta = widget._repr_mimebundle_()
    assert WIDGET_VIEW in bundle and "<svg" in bundle["text/html"]
    svg = static_svg(widget.data, "encoder_self", 0, 1)
    assert len(re.findall(r"<rect ", svg)) == 5 * 5  # every cell of the 5-token map
    assert all(f">{t}<" in svg for t in "cafe") and "&lt;/s&gt;" in svg and "head 1" in svg


def test_the_front_end_is_one_es_module_with_no_address_outside():
    source = ESM.read_text(encoding="utf-8")
    assert "export default" in source and not re.search(r"^\s*import\b", source, re.M)
    assert not re.search(r"https?://", source)


def test_the_front_end_draws_hovers_and_a_click_selects_layer_and_head(records):
    """The ES module in Chromium with a stand-in for anywidget's model (get, set, on, save_changes), every request
    outside the page blocked and recorded."""
    from harness.notebook_page import widget_page
    from tests.browser_helpers import chromium

    cap, trace = records
    widget = attention_widget(cap, trace, kind="encoder_self", layer=1)
    outside = []
    with chromium() as browser:
        page = browser.new_page()
        page.route("**/*", lambda route: (outside.append(route.request.url), route.abort()))
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.set_content(widget_page(widget))
        page.wait_for_selector(".tv-root[data-draws] svg rect", timeout=60_000)
        assert page.locator(".tv-plot svg rect").count() == 25  # one 5 x 5 map
        page.locator(".tv-plot svg rect[data-i='2'][data-j='0']").hover()
        tip = page.locator(".tv-tip").inner_text()
        assert "f" in tip.splitlines()[0] and tip.splitlines()[1].endswith(": c")  # query 2 (f), key 0 (c)
        page.click("button[data-view='model']")
        page.wait_for_selector(".tv-root[data-view='model'] .tv-pick")
        assert page.locator(".tv-pick").count() == 2 * 2  # 2 encoder layers x 2 heads
        page.click(".tv-pick[data-layer='0'][data-head='1']")
        page.wait_for_selector(".tv-root[data-view='head'][data-layer='0'][data-head='1']")
        assert page.evaluate("[window.__state.layer, window.__state.head, window.__state.view]") == [0, 1, "head"]
        page.close()
    assert errors == [] and [u for u in outside if not u.startswith(("blob:", "about:", "data:"))] == []


def test_the_example_notebook_runs_in_a_kernel_and_its_output_is_the_widget():
    import nbclient
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    client.execute()
    shown = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if WIDGET_VIEW in o.get("data", {})]
    assert len(shown) == 2 and all("<svg" in o["data"]["text/html"] for o in shown)
    states = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    ids = {o["data"][WIDGET_VIEW]["model_id"] for o in shown}
    fronts = [states[i]["state"]["_esm"] for i in ids]
    assert fronts and all("export default" in f and not re.search(r"https?://", f) for f in fronts)
    assert {states[i]["state"]["head"] for i in ids} == {-1, 1}  # the second cell's widget.head = 1 reached it
