"""Build only what is shown: one view per run, views in the URL, no model work on a view change, downloads on request."""

import importlib
import io
import json

import numpy as np
import pytest

from model import capture
from tests.apptest_helpers import chart_titles, charts, open_page
from tests.browser_helpers import letters_checkpoint
from ui.serving import caches
from ui.serving.bounded_cache import BoundedCache, nbytes

ATTENTION_VIEWS = {
    "one": "Cross-attention (decoder → encoder), layer 2, average of heads",
    "grid": "Cross-attention (decoder → encoder), layer 2",
    "overview": "Cross-attention (decoder → encoder): rows are layers, columns heads",
}


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """A small random char-level model (letters a-h): 2 encoder and 3 decoder layers of 2 heads."""
    return letters_checkpoint(tmp_path_factory.mktemp("views"), card={"examples": ["cafe"]})


@pytest.fixture
def model_runs(monkeypatch):
    """Counts every capture() and decoding (greedy_decode, or the fused greedy_ids of the shared decode) the app's
    caches run."""
    decoding = importlib.import_module("model.decoding")
    calls = {"capture": 0, "decode": 0}
    real_capture, real_decode, real_ids = caches.capture, caches.greedy_decode, decoding.greedy_ids

    def counted_capture(*args, **kwargs):
        calls["capture"] += 1
        return real_capture(*args, **kwargs)

    def counted_decode(*args, **kwargs):
        calls["decode"] += 1
        return real_decode(*args, **kwargs)

    def counted_ids(*args, **kwargs):
        calls["decode"] += 1
        return real_ids(*args, **kwargs)

    monkeypatch.setattr(caches, "capture", counted_capture)
    monkeypatch.setattr(caches, "greedy_decode", counted_decode)
    monkeypatch.setattr(decoding, "greedy_ids", counted_ids)
    for cache in (caches.CAPTURES, caches.TRACES, caches.DECODES):
        cache.clear()
    return calls


@pytest.mark.parametrize("view", list(ATTENTION_VIEWS))
def test_only_the_chosen_attention_view_is_built_and_it_is_in_the_link(view, ckpt):
    at = open_page("attention", f"path:{ckpt}", text="cafe", att_view=view)
    assert not at.exception, at.exception
    assert chart_titles(at) == [ATTENTION_VIEWS[view]]  # one chart: the hidden views cost nothing
    assert not at.get("iframe")
    assert at.segmented_control(key="att_view").value == view and at.query_params["att_view"] == view


def test_bertviz_is_built_only_when_chosen_and_kept_per_input(ckpt):
    at = open_page("attention", f"path:{ckpt}", text="cafe")
    assert not at.get("iframe")
    at.segmented_control(key="att_view").set_value("bertviz").run()
    assert not charts(at) and len(at.get("iframe")) == 1 and at.query_params["att_view"] == "bertviz"
    key = (f"path:{ckpt}", "cafe", None, "head", "Cross", 2, False, "en")
    assert key in caches.HTML  # the HTML is kept per (model, input, view, kind, layer, presentation, language)
    page = at.get("iframe")[0].proto.srcdoc  # the page's layer and kind menus choose: bertviz's own are hidden
    assert '<select id="layer">' in page and '<span class="menus" style="user-select:none" hidden>' in page
    at.selectbox(key="att_layer").set_value(0).run()
    assert (*key[:-3], 0, False, "en") in caches.HTML and key in caches.HTML


def test_a_view_change_runs_nothing_of_the_model(ckpt, model_runs):
    at = open_page("attention", f"path:{ckpt}", text="bead")
    assert model_runs == {"capture": 1, "decode": 1}  # the shared decode, then one pass on its output (issue 23)
    at.segmented_control(key="att_view").set_value("grid").run()
    at.radio(key="att_kind").set_value("encoder_self").run()
    at.selectbox(key="att_layer").set_value(0).run()
    at.segmented_control(key="att_view").set_value("one").run()
    at.selectbox(key="att_head").set_value(1).run()
    assert chart_titles(at) == ["Encoder self-attention, layer 0, head 1"]
    assert model_runs == {"capture": 1, "decode": 1}
    at.sidebar.text_area(key="text").set_value("cab").run()  # a new input does run the model
    assert model_runs == {"capture": 2, "decode": 2}


def test_the_decoding_page_decodes_once_and_steps_from_the_cache(ckpt, model_runs):
    at = open_page("decoding", f"path:{ckpt}", text="bead")
    at.button(key="dec_next").click().run()
    at.selectbox(key="dec_layer").set_value(0).run()
    assert not at.exception and at.markdown[0].value.startswith("**Step 2 of")
    assert model_runs == {"capture": 1, "decode": 1}  # the steps are read from one pass over the decoded output


@pytest.mark.parametrize(
    ("page", "key", "views"),
    [
        ("positional", "pe_view", ["matrix", "similarity", "mine"]),
        ("model", "model_view", ["params", "weights", "config"]),
    ],
)
def test_other_pages_build_one_view_and_keep_it_in_the_link(page, key, views, ckpt):
    at = open_page(page, f"path:{ckpt}", text="cafe")
    for view in views:
        at.segmented_control(key=key).set_value(view).run()
        assert not at.exception and at.query_params[key] == view
        expected = {"matrix": 1, "similarity": 1, "mine": 2, "params": 1, "weights": 1, "config": 0}[view]
        assert len(charts(at)) == expected, view
    linked = open_page(page, f"path:{ckpt}", text="cafe", **{key: views[0]})
    assert linked.segmented_control(key=key).value == views[0]


def test_downloads_are_made_on_request_with_the_right_content(ckpt, deferred, model_runs):
    at = open_page("decoding", f"path:{ckpt}", text="bead")
    assert {"capture.npz", "capture.json", "decoding.json"} <= set(deferred)
    assert model_runs["capture"] == 1  # the steps' one pass over the decoded output; offering the files made nothing
    from model import load_checkpoint

    model, tokenizer = load_checkpoint(ckpt)
    expected = capture(model, tokenizer, "bead")
    arrays = np.load(io.BytesIO(deferred["capture.npz"]()))  # pressing the button
    assert model_runs["capture"] == 1  # the file is that pass's capture (issue 23: the pages share it)
    for name, value in expected.arrays().items():
        np.testing.assert_allclose(arrays[name], value, atol=1e-6, err_msg=name)
    data = json.loads(deferred["capture.json"]())
    assert data["source_tokens"] == expected.source_tokens and data["target_tokens"] == expected.target_tokens
    np.testing.assert_allclose(np.asarray(data["cross"]), expected.cross, atol=1e-5)
    assert model_runs["capture"] == 1  # the second file reuses the capture
    trace = json.loads(deferred["decoding.json"]())
    assert trace["source_tokens"] == expected.source_tokens and len(trace["steps"]) >= 1
    assert not at.exception


def test_pe_table_downloads_on_request(ckpt, deferred):
    open_page("positional", f"path:{ckpt}", text="cafe", pe_d="16", pe_len="30")
    arrays = np.load(io.BytesIO(deferred["pe_30x16.npz"]()))
    pos, i = np.arange(30)[:, None], np.arange(8)[None, :]
    angle = pos / 10000.0 ** (2 * i / 16)
    np.testing.assert_allclose(arrays["pe"], np.stack([np.sin(angle), np.cos(angle)], -1).reshape(30, 16), atol=1e-5)
    table = json.loads(deferred["pe_30x16.json"]())["pe"]
    assert table["shape"] == [30, 16] and np.allclose(table["values"], arrays["pe"], atol=1e-5)


# -- the bounded cache ---------------------------------------------------------------------------------


def test_cache_evicts_the_least_recently_used_by_size():
    cache = BoundedCache("test", max_entries=10, max_bytes=1000)
    a, b, c = (np.zeros(100, np.float32) for _ in range(3))  # 400 bytes each
    cache.get("a", lambda: a)
    cache.get("b", lambda: b)
    assert cache.get("a", lambda: pytest.fail("a is cached")) is a  # a is now the most recent
    cache.get("c", lambda: c)  # 1200 bytes > 1000: b, the least recently used, goes
    assert "a" in cache and "c" in cache and "b" not in cache and cache.bytes == 800
    assert cache.get("b", lambda: np.ones(3)).tolist() == [1, 1, 1]  # computed again


def test_cache_evicts_by_entries_and_never_keeps_what_is_too_big():
    cache = BoundedCache("test", max_entries=2, max_bytes=10**6)
    for key in "xyz":
        cache.get(key, lambda: b"12345")
    assert len(cache) == 2 and "x" not in cache and cache.bytes == 10
    huge = np.zeros(300_000)  # 2.4 MB
    assert cache.get("huge", lambda: huge) is huge and "huge" not in cache and cache.bytes == 10


def test_cached_values_are_read_only_and_sized_from_their_arrays(ckpt):
    from model import load_checkpoint

    model, tokenizer = load_checkpoint(ckpt)
    cap = capture(model, tokenizer, "cafe")
    arrays = sum(a.nbytes for a in cap.arrays().values())
    assert arrays <= nbytes(cap) < arrays + 10_000
    cache = BoundedCache("test", max_entries=4, max_bytes=10**7)
    shared = cache.get("k", lambda: cap)
    with pytest.raises(ValueError, match="read-only"):
        shared.cross[0, 0, 0, 0] = 1.0  # one session cannot change what every session sees


def test_lists_of_plain_values_are_counted_as_their_items_and_arrays_beside_them_frozen():
    import sys

    tokens, ids = ["a", "é", "<s>"] * 1000, list(range(3000))
    assert nbytes(tokens) == sys.getsizeof(tokens) + sum(len(t.encode()) for t in tokens)
    assert nbytes(ids) == sys.getsizeof(ids) + sum(sys.getsizeof(i) for i in ids)
    mixed = ["a", 1, np.ones(4, np.float32)]  # not plain: walked item by item
    assert nbytes(mixed) == sys.getsizeof(mixed) + 1 + sys.getsizeof(1) + 16
    cache = BoundedCache("test", max_entries=2, max_bytes=10**6)
    shared = cache.get("k", lambda: (tokens, ids, mixed))
    with pytest.raises(ValueError, match="read-only"):
        shared[2][2][0] = 0.0


# -- server settings -----------------------------------------------------------------------------------


def test_server_threads_are_set_from_the_environment():
    """One torch thread and one numpy BLAS thread per server process unless VIZ_TORCH_THREADS says otherwise (run
    apart: it is process-wide)."""
    import subprocess
    import sys

    from tests.apptest_helpers import ROOT

    code = """import os, numpy, torch
from threadpoolctl import threadpool_info
from ui.serving.threads import set_server_threads as s
for value in ("3", None, "lots", "2"):
    os.environ.pop("VIZ_TORCH_THREADS", None)
    if value is not None:
        os.environ["VIZ_TORCH_THREADS"] = value
    print(s(), torch.get_num_threads(), *sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-5:-1] == ["3 3 3", "1 1 1", "1 1 1", "2 2 2"], out.stdout


def test_the_server_config_names_options_this_streamlit_knows():
    import tomllib

    from streamlit import config

    from tests.apptest_helpers import ROOT

    settings = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    names = {f"{section}.{key}" for section, values in settings.items() for key in values}
    assert {"server.fileWatcherType", "server.folderWatchBlacklist", "browser.serverAddress"} <= names
    assert names <= set(config._config_options_template), names - set(config._config_options_template)
    assert settings["server"]["fileWatcherType"] == "none" and ".venv" in settings["server"]["folderWatchBlacklist"]
