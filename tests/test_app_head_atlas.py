"""The Head atlas page through AppTest, on the induction demo: the grid coloured by strongest role, the switch-off
table, a head chosen by the link, the downloads, and the atlas read back from the disk cache without computing."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from model import head_scores, load_checkpoint
from model.analysis.head_scores import default_items, perfect_score
from model.checkpoints.demos import CHECKPOINTS
from tests.apptest_helpers import charts, open_page
from ui.views import head_atlas_ui

shipped = pytest.mark.skipif(not (CHECKPOINTS / "induction").is_dir(), reason="the induction demo is not shipped")
MODEL = "demo:induction"


@pytest.fixture(autouse=True)
def cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("VIZ_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "atlas_cache"))


@pytest.fixture(scope="module")
def demo():
    return load_checkpoint(CHECKPOINTS / "induction")


def arr(value) -> np.ndarray:
    """A figure JSON field as an array: plotly writes numpy arrays as {dtype, bdata (base64), shape}."""
    if isinstance(value, dict) and "bdata" in value:
        a = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        return a.reshape([int(n) for n in str(value["shape"]).split(",")]) if value.get("shape") else a
    return np.asarray(value)


def grid(at) -> dict:
    return next(c for c in charts(at) if len(c["data"]) >= 2 and c["data"][0].get("mode") == "markers")


@shipped
def test_the_grid_the_tests_and_the_head_of_the_link(demo):
    head_atlas_ui.ATLASES.drop(lambda key: True)
    at = open_page("head_atlas", MODEL, atl_roles="induction,previous_token", atl_layer="1", atl_head="0")
    assert not at.exception
    figure = grid(at)
    names = [t["name"] for t in figure["data"] if t.get("name")]
    titles = head_atlas_ui.ROLE_TITLES
    assert names == [titles["previous_token"], titles["induction"]]  # the library's order of roles
    model, tok = demo
    induction = head_scores(model, tok, "induction")  # the page's random sequences: the default ones, seed 0
    best = np.unravel_index(int(np.argmax(induction)), induction.shape)
    squares = {(int(y), int(x)) for y, x in zip(arr(figure["data"][1]["y"]), arr(figure["data"][1]["x"]))}
    assert tuple(int(v) for v in best) in squares  # the best induction head is coloured as induction
    table = at.dataframe[0].value
    assert list(table.iloc[:, 0]) == names
    assert table.iloc[1, 1] == f"{best[0]}.{best[1]}"  # induction's top head, switched off
    assert table.iloc[1, -1] in head_atlas_ui.VERDICTS.values()
    assert at.query_params["atl_layer"] == "1" and at.query_params["atl_head"] == "0"
    assert at.selectbox(key="atl_layer").value == 1 and at.selectbox(key="atl_head").value == 0
    bar = next(c for c in charts(at) if c["data"][0].get("type") == "bar")
    seqs = default_items(model, tok, "induction", seed=0)
    perfect = float(np.mean([perfect_score("induction", q) for q in seqs]))
    assert bar["data"][0]["y"][1] == pytest.approx(induction[1, 0] / perfect, abs=1e-9)
    data = [
        b for b in at.get("download_button") if not b.key.endswith("_figdl_button")
    ]  # the charts' figure files aside
    assert [b.key for b in data] == ["atl_dl_json", "atl_dl_npz"]


@shipped
def test_the_demo_atlas_comes_back_from_disk_without_computing(demo, monkeypatch):
    head_atlas_ui.ATLASES.drop(lambda key: True)
    first = open_page("head_atlas", MODEL, atl_roles="first_token")
    assert not first.exception
    head_atlas_ui.ATLASES.drop(lambda key: True)  # a new process: nothing in memory

    def refuse(*args, **kwargs):
        raise AssertionError("computed again")

    monkeypatch.setattr(head_atlas_ui, "compute_atlas", refuse)
    again = open_page("head_atlas", MODEL, atl_roles="first_token")
    assert not again.exception and not again.error
    assert json.dumps(grid(again)["data"][0]["y"]) == json.dumps(grid(first)["data"][0]["y"])


def test_an_encoder_decoder_demo_offers_its_cross_attention_on_the_gold_alignment():
    at = open_page("head_atlas", "demo:reverse", atl_kind="cross")
    assert not at.exception and not at.error
    assert at.selectbox(key="atl_kind").options[-1] == head_atlas_ui.KIND_TITLES["cross"]
    heat = next(c for c in charts(at) if c["data"][0].get("type") == "heatmap")
    z = arr(heat["data"][0]["z"]).astype(float)
    model, _ = load_checkpoint(CHECKPOINTS / "reverse")
    assert z.shape == (model.config.n_decoder_layers, model.config.n_heads)
    assert ((0 <= z) & (z <= 1)).all() and z.max() >= 0.5  # a trained reverser has heads on the gold source token
