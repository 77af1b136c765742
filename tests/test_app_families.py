"""What the Llama-like families add, as the pages show it: a local layer's sliding window is a band whose cells outside
it are masked (drawn grey, NaN in the figure), not weight 0; the layer menu and the overview name each layer's kind;
Inside attention shows the soft-capped scores of Gemma 2 (the numbers checked against a recomputation); every page
runs on a Gemma 2 folder (local and global layers, soft-capping, sandwich norms). Tiny folders from
harness/hf_decoders.py."""

from __future__ import annotations

import base64
import math

import numpy as np
import pytest

from harness.hf_decoders import WINDOW, build
from model import capture, load_checkpoint
from model.analysis import inside
from tests.apptest_helpers import charts, open_page
from viz.attention_figs import layer_masks, layer_names, window_mask
from viz.overview_figs import layer_head_overview

pytestmark = pytest.mark.filterwarnings("ignore")
TEXT = "birds sang while the dog ran to the red house"


@pytest.fixture(scope="module")
def gemma2(tmp_path_factory):
    folder, hf, _fast = build("gemma2", tmp_path_factory.mktemp("families-app"))
    model, tok = load_checkpoint(folder)
    return folder, hf, model, tok


def _array(data) -> np.ndarray:
    if isinstance(data, dict) and "bdata" in data:
        array = np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))
        shape = data.get("shape")
        return array.reshape([int(n) for n in str(shape).split(",")]) if shape else array
    return np.asarray(data, dtype=float)


def no_error(at) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def test_the_window_mask_is_the_band_of_the_definition():
    """Query i of a local layer sees keys j with 0 <= i - j < w: everything else masked (Beltagy et al.'s band)."""
    T, w = 6, 3
    want = np.array([[not (0 <= i - j < w) for j in range(T)] for i in range(T)])
    assert np.array_equal(window_mask(T, T, w), want)
    assert np.array_equal(window_mask(T, T, None), np.triu(np.ones((T, T), dtype=bool), 1))
    per_layer = layer_masks("decoder_self", T, T, [w, None])
    assert per_layer.shape == (2, 1, T, T) and np.array_equal(per_layer[0, 0], want)
    assert layer_masks("encoder_self", T, T, None) is None
    assert len(set(layer_names(2, [w, None]))) == 2 and layer_names(2) != layer_names(2, [w, None])


def test_the_overview_greys_out_each_local_layers_far_keys():
    T, w = 5, 2
    weights = np.full((2, 1, T, T), 0.2, dtype=np.float32)
    fig = layer_head_overview(weights, mask=layer_masks("decoder_self", T, T, [w, None]))
    z = np.asarray(fig.data[0].z, dtype=float)  # tiles stacked: layer 0's rows, a blank row, layer 1's
    local, global_ = z[:T, :T], z[T + 1 :, :T]
    assert np.all(np.isnan(local[window_mask(T, T, w)])) and not np.isnan(local[~window_mask(T, T, w)]).any()
    assert not np.isnan(global_[2, 0]) and np.isnan(global_[0, 1])  # the global layer: the causal mask only


def test_capture_records_each_layers_window_from_the_config(gemma2):
    _folder, hf, model, tok = gemma2
    cap = capture(model, tok, TEXT)
    kinds = {"sliding_attention": WINDOW, "full_attention": None}
    assert cap.windows == {"decoder_self": [kinds[t] for t in hf.config.layer_types]}


def test_the_attention_page_draws_a_local_layer_as_a_band_with_masked_cells(gemma2):
    folder, hf, model, tok = gemma2
    at = open_page("attention", f"path:{folder}", text=TEXT, att_layer="0", att_head="0")
    no_error(at)
    options = at.selectbox(key="att_layer").options
    assert options == layer_names(3, [WINDOW, None, WINDOW])
    cap = capture(model, tok, TEXT)
    z = _array(charts(at)[0]["data"][0]["z"]).astype(float)
    T = z.shape[0]
    band = window_mask(T, T, WINDOW)
    assert np.all(np.isnan(z[band])) and not np.isnan(z[~band]).any()
    n = cap.decoder_self.shape[-1]  # the page draws prompt + continuation: the prompt's rows are causal, the same
    np.testing.assert_allclose(z[:n, :n][~band[:n, :n]], cap.decoder_self[0, 0][~band[:n, :n]], atol=1e-5)
    at = open_page("attention", f"path:{folder}", text=TEXT, att_layer="1", att_head="0")
    z = _array(charts(at)[0]["data"][0]["z"]).astype(float)  # a global layer: only the causal mask
    assert np.array_equal(np.isnan(z), window_mask(T, T, None))


def test_inside_attention_shows_the_soft_capped_scores(gemma2):
    """The page's soft-capped scores equal c tanh(q.k / sqrt(query_pre_attn_scalar) / c) recomputed here from the
    recorded q and k, and the step's weights row equals the recorded map (transformers', tests/test_import_families)."""
    folder, hf, model, tok = gemma2
    at = open_page("inside", f"path:{folder}", text=TEXT, in_kind="decoder_self", in_layer="0", in_head="1",
                   in_query="8")  # fmt: skip
    no_error(at)
    cap = capture(model, tok, TEXT, qkv=True)
    q, k, _v = (a[0, 1] for a in cap.qkv["decoder_self"])
    c, scalar = hf.config.attn_logit_softcapping, hf.config.query_pre_attn_scalar
    scaled = k.astype(np.float64) @ q[8] / math.sqrt(scalar)
    capped = c * np.tanh(scaled / c)
    bars = [_array(t["y"]) for chart in charts(at) for t in chart["data"] if t.get("type") == "bar"]
    n = len(capped)  # the page's sequence goes on with the continuation: the prompt's keys come first, the same
    assert any(len(b) >= n and np.allclose(b[:n], capped, atol=1e-4) for b in bars)
    step = inside.step_from_capture(
        cap, "decoder_self", 0, 1, 8, **inside.head_settings(model.config, "decoder_self", 0)
    )
    assert step.window == WINDOW and not step.allowed[: 8 - WINDOW + 1].any() and step.allowed[8 - WINDOW + 1 : 9].all()
    np.testing.assert_allclose(step.weights, cap.decoder_self[0, 1, 8], atol=1e-5)


@pytest.mark.parametrize("page", ["positional", "decoding", "attribution", "model", "compare", "lecture_pack"])
def test_every_other_page_runs_on_a_gemma2_folder(gemma2, page):
    at = open_page(page, f"path:{gemma2[0]}", text=TEXT, **({"cmp_layer": "0"} if page == "compare" else {}))
    no_error(at)
    if page == "lecture_pack":  # exported with the model's graph (its band and soft-capping traced), checked on build
        at.button(key="pack_build").click().run(timeout=180)
        no_error(at)
        assert len(at.get("download_button")) == 1
    elif page == "compare":  # layer 0 (local): its band, masked
        z = _array(charts(at)[0]["data"][0]["z"]).astype(float)
        assert np.array_equal(np.isnan(z), window_mask(*z.shape, WINDOW))
    elif page != "model":
        assert charts(at), page
