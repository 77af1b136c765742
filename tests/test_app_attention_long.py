"""The Attention page on an input longer than a chart carries (a GPT-2-shaped folder of 400 positions), through
AppTest: the maps come from the lazy capture's API (harness/lazy_adapter.EagerLazy stands in for it here), drawn
pooled with a window at full resolution kept in the link, and every view sends under 2 MB."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from harness import lazy_adapter
from harness.byte_level import byte_level, sentences
from tests.apptest_helpers import charts, open_page
from ui.shell.url_state import invalid_warning
from viz.overview_figs import CELL_NOTES

pytestmark = pytest.mark.filterwarnings("ignore")
POSITIONS = 400  # the model's max_len: the text below is cut to it, 400 tokens a side, pooled in blocks of 2
TEXT = " ".join(sentences(3))[:3000]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    import torch
    import transformers

    folder = tmp_path_factory.mktemp("long") / "gpt2-long"
    folder.mkdir()
    tok = byte_level(folder, ["<|endoftext|>"])
    end = tok.token_to_id("<|endoftext|>")
    config = transformers.GPT2Config(vocab_size=tok.get_vocab_size(), n_positions=POSITIONS, n_embd=32, n_layer=2,
                                     n_head=4, bos_token_id=end, eos_token_id=end)  # fmt: skip
    torch.manual_seed(0)
    transformers.GPT2LMHeadModel(config).save_pretrained(str(folder))
    return folder


@pytest.fixture
def lazy(monkeypatch):
    lazy_adapter.install(monkeypatch)


def open_long(folder, **params):
    at = open_page("attention", f"path:{folder}", text=TEXT, timeout=120, **params)
    assert not at.exception, at.exception
    return at


def sent_bytes(at) -> int:
    return sum(len(c.proto.spec.encode()) for c in at.get("plotly_chart"))


def test_one_head_is_pooled_with_a_window_at_full_resolution(folder, lazy):
    at = open_long(folder)
    big, zoom = charts(at)
    assert CELL_NOTES["max"].format(a=2, b=2) in big["layout"]["title"]["text"]  # the pooling named on the chart
    assert big["data"][0]["z"]["shape"].replace(" ", "") == "200,200"  # 400 positions in blocks of 2
    assert big["layout"]["shapes"][0]["type"] == "rect"  # the window outlined on the pooled map
    assert len(zoom["data"][0]["y"]) == 64 and zoom["data"][0]["y"][0].startswith("0: ")
    assert at.query_params["att_q"] == "0-63" and at.query_params["att_k"] == "0-63"
    assert sent_bytes(at) <= 2 * 2**20


def test_the_window_and_the_pooling_come_from_the_link(folder, lazy):
    at = open_long(folder, att_q="300-340", att_k="280-399", att_pool="mean", att_head="2")
    big, zoom = charts(at)
    assert CELL_NOTES["mean"].format(a=2, b=2) in big["layout"]["title"]["text"]
    assert zoom["data"][0]["y"][0].startswith("300: ") and len(zoom["data"][0]["y"]) == 41
    assert zoom["data"][0]["x"][0].startswith("280: ") and len(zoom["data"][0]["x"]) == 120
    assert {k: at.query_params[k] for k in ("att_q", "att_k", "att_pool")} == {
        "att_q": "300-340",
        "att_k": "280-399",
        "att_pool": "mean",
    }


def test_a_bad_window_in_a_link_gets_the_one_warning_and_the_default(folder, lazy):
    from ui.views.attention_long import URL

    at = open_long(folder, att_q="banana")
    assert invalid_warning(URL["att_q"]) in [w.value for w in at.warning]
    assert at.query_params["att_q"] == "0-63"


@pytest.mark.parametrize("view, n_charts", [("grid", 1), ("overview", 2), ("sinks", 1)])
def test_the_other_views_of_a_long_input_send_under_2_mb(folder, lazy, view, n_charts):
    at = open_long(folder, att_view=view)
    drawn = charts(at)
    assert len(drawn) == n_charts
    assert sent_bytes(at) <= 2 * 2**20
    for chart in drawn:  # at most about 256 x 256 cells a chart
        cells = sum(np.prod([int(n) for n in str(t["z"]["shape"]).split(",")]) for t in chart["data"]
                    if isinstance(t.get("z"), dict))  # fmt: skip
        assert cells <= 256 * 256 * 1.05
    if view == "overview":  # each head's summaries, every one of them in the hover
        assert len(drawn[0]["data"][0]["customdata"][0][0]) == 5


def test_inside_attention_draws_the_keys_of_a_window(folder):
    at = open_page("inside", f"path:{folder}", text=TEXT, timeout=120, in_k="280-399", in_layer="1", in_head="2")
    assert not at.exception, at.exception
    raw = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "in_raw" in c.proto.id)
    x = raw["data"][0]["x"]
    x = np.frombuffer(base64.b64decode(x["bdata"]), dtype=np.dtype(x["dtype"])) if isinstance(x, dict) else x
    assert list(x) == list(range(280, 400))  # the window's keys, at their positions in the whole input
    assert raw["layout"]["xaxis"]["ticktext"][0].startswith("280: ")
    assert at.query_params["in_k"] == "280-399"
    assert at.session_state["in_key"] in range(280, 400)  # the key of the products: one of the window's


def test_the_long_views_are_in_the_readers_language(folder, lazy):
    from i18n import _, language_scope

    at = open_long(folder, lang="zh")
    big, _zoom = charts(at)
    with language_scope("zh"):
        note = _(CELL_NOTES["max"]).format(a=2, b=2)
    assert note != CELL_NOTES["max"].format(a=2, b=2)  # the catalog has it
    assert note in big["layout"]["title"]["text"]


@pytest.mark.parametrize("view", ["one", "grid", "overview", "sinks"])
def test_every_view_through_the_real_lazy_capture(folder, view):
    """The page's own path (caches.cached_lazy_capture, no stand-in): each view draws, the one-head map pooled."""
    at = open_long(folder, att_view=view)
    drawn = charts(at)
    assert drawn and sent_bytes(at) <= 2 * 2**20
    if view == "one":
        assert drawn[0]["data"][0]["z"]["shape"].replace(" ", "") == "200,200"  # 400 positions in blocks of 2
