"""What the Llama-like families add, as the pages show it: a local layer's sliding window is a band whose cells outside
it are masked (drawn grey, NaN in the figure), not weight 0; the layer menus and the overview name each layer's kind;
Inside attention shows the soft-capped scores of Gemma 2 (the numbers checked against a recomputation). Every page,
the Lecture pack's build included, runs for every family of the format registry (the Attention page's band
checked). Tiny folders from harness/hf_decoders.py, built once for the module; each family's model is loaded once
and shared by its pages (the app's cache)."""

from __future__ import annotations

import base64
import math
import re

import numpy as np
import pytest

from harness.hf_decoders import WINDOW, build_loaded
from model import capture
from model.analysis import inside
from model.checkpoints.formats import REGISTRY
from pack.live import PACK_REFUSED
from tests.apptest_helpers import charts, open_page
from tests.i18n_helpers import matching
from ui.shell.navigation import PAGES
from viz.attention_figs import layer_masks, layer_names, window_mask
from viz.overview_figs import layer_head_overview
from viz.pooling import pool, pool_rows

pytestmark = pytest.mark.filterwarnings("ignore")
TEXT = "birds sang while the dog ran to the red house"
FAMILIES = [fmt.NAME for fmt in REGISTRY if hasattr(fmt, "FAMILY")]  # the Llama-like families, from the registry


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every family's tiny folder: {name: (folder, transformers config, our model, our tokenizer)} (the pages need
    no transformers model read back)."""
    loaded = build_loaded(FAMILIES, tmp_path_factory.mktemp("families-app"), reference=False)
    return {name: (folder, hf, model, tok) for name, (folder, hf, _fast, model, tok) in loaded.items()}


@pytest.fixture(scope="module")
def gemma2(built):
    return built["gemma2"]


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


def test_a_long_maps_pooled_blocks_and_zoom_mask_a_local_layers_far_keys():
    """The long-input views (pooled from row blocks, and the window at full resolution) keep the band: pooling a
    banded map row block by row block equals pooling it whole with the band's cells masked, so a block wholly
    outside the window is NaN (masked), not 0; a zoomed part of the map is masked where the whole map is."""
    T, w, cells = 40, 6, 8
    rng = np.random.default_rng(0)
    mask = window_mask(T, T, w)
    weights = np.where(mask, 0.0, rng.random((T, T))).astype(np.float32)
    whole = pool(weights, cells, mask)
    blocks = pool_rows(lambda rows: weights[rows], T, T, cells, causal=True, window=w)
    np.testing.assert_allclose(blocks.max, whole.max, atol=1e-6)
    np.testing.assert_allclose(blocks.mean, whole.mean, atol=1e-6)
    assert np.isnan(blocks.mean[-1, 0]) and not np.isnan(blocks.mean[-1, -1])
    assert np.array_equal(window_mask(10, 12, w, 20, 15), mask[20:30, 15:27])


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
    assert cap.windows == {"decoder_self": [kinds[t] for t in hf.layer_types]}


def test_inside_attention_shows_the_soft_capped_scores(gemma2):
    """The page's soft-capped scores equal c tanh(q.k / sqrt(query_pre_attn_scalar) / c) recomputed here from the
    recorded q and k, and the step's weights row equals the recorded map (transformers', tests/test_import_families)."""
    folder, hf, model, tok = gemma2
    at = open_page("inside", f"path:{folder}", text=TEXT, in_kind="decoder_self", in_layer="0", in_head="1",
                   in_query="8")  # fmt: skip
    no_error(at)
    cap = capture(model, tok, TEXT, qkv=True)
    q, k, _v = (a[0, 1] for a in cap.qkv["decoder_self"])
    c, scalar = hf.attn_logit_softcapping, hf.query_pre_attn_scalar
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


@pytest.mark.parametrize("name", FAMILIES)
def test_every_page_runs_for_each_family(built, name):
    """Every page of PAGES for every family of the registry, without an error. Attention: its layer menu names each
    layer's kind, and the chosen layer (a mixed model's first global one, else layer 0) is masked as its kind says
    (the band, or the causal mask alone), its other cells the captured weights; Compare's layer 0 masked the same
    way; the Lecture pack built, carrying the model (no "runs no model of its own" note); the pages that draw charts
    draw some."""
    folder, _hf, model, tok = built[name]
    kinds, w = model.config.kinds, model.config.sliding_window
    layer = kinds.index("global") if {"local", "global"} <= set(kinds) else 0
    shown = {"attention": layer, "compare": 0}
    params = {"attention": {"att_layer": str(layer), "att_head": "0"}, "compare": {"cmp_layer": "0"},
              "lecture_pack": {"pack_inputs": TEXT}}  # fmt: skip
    for page in PAGES:
        at = open_page(page, f"path:{folder}", text=TEXT, **params.get(page, {}))
        no_error(at)
        if page in shown:
            z = _array(charts(at)[0]["data"][0]["z"]).astype(float)
            mask = window_mask(*z.shape, w if kinds[shown[page]] == "local" else None)
            assert np.array_equal(np.isnan(z), mask), (name, page)
        if page == "attention":
            windows = [w if kind == "local" else None for kind in kinds] if "local" in kinds else None
            assert at.selectbox(key="att_layer").options == layer_names(len(kinds), windows)
            maps = capture(model, tok, TEXT).decoder_self[layer, 0]  # the page goes on with the continuation
            n = maps.shape[-1]
            np.testing.assert_allclose(z[:n, :n][~mask[:n, :n]], maps[~mask[:n, :n]], atol=1e-5)
        elif page == "lecture_pack":
            at.button(key="pack_build").click().run(timeout=180)
            no_error(at)
            assert len(at.get("download_button")) == 1, name
            assert not any(re.search(matching(PACK_REFUSED), i.value) for i in at.info), name
        elif page not in ("compare", "model", "training", "head_atlas"):
            assert charts(at), (name, page)
