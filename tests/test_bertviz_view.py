"""viz.bertviz_view: the params embedded in the page, options, errors, offline-ness, escaping, size."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from harness.random_attention import random_attention as attention
from harness.random_attention import stock_bertviz_html
from viz import bertviz_assets as assets
from viz.bertviz_assets import BertvizAssetError
from viz.bertviz_view import head_view_html, model_view_html, weights_json

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = "</script><script>alert(1)</script>"
CDN = "https://cdnjs.cloudflare.com/ajax/libs"


SRC = ["the", "cat", "sat", "down", "</s>"]
TGT = ["<s>", "le", "chat", "assis"]


def params_of(html: str) -> dict:
    """The params object the page hands to bertviz's script, parsed back as JSON, weights divided back
    by the scale the page passes to bertvizDecode (as the page's script does)."""
    start = html.index("const params = bertvizDecode(") + len("const params = bertvizDecode(")
    params, end = json.JSONDecoder().raw_decode(html, start)
    scale = int(re.match(r",\s*(\d+)\)", html[end:]).group(1))
    for entry in params["attention"]:
        entry["attn"] = (np.array(entry["attn"]) / scale).tolist()
    return params


def rounded(a: np.ndarray, decimals: int = 3) -> np.ndarray:
    return np.round(a.astype(np.float64), decimals)


class Scripts(HTMLParser):
    """Collects each <script> element (attributes and text) the way an HTML parser splits the page."""

    def __init__(self):
        super().__init__()
        self.scripts: list[tuple[dict, str]] = []
        self._in = None

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._in = (dict(attrs), [])

    def handle_data(self, data):
        if self._in is not None:
            self._in[1].append(data)

    def handle_endtag(self, tag):
        if tag == "script" and self._in is not None:
            self.scripts.append((self._in[0], "".join(self._in[1])))
            self._in = None


def scripts_of(html: str) -> list[tuple[dict, str]]:
    parser = Scripts()
    parser.feed(html)
    parser.close()
    return parser.scripts


# ---------------------------------------------------------------------------------------------- params


def test_head_view_params_are_the_rounded_arrays_and_tokens():
    enc, dec, crs = attention()
    html = head_view_html(enc, dec, crs, SRC, TGT)
    p = params_of(html)
    assert [a["name"] for a in p["attention"]] == ["Encoder", "Decoder", "Cross"]
    for entry, a in zip(p["attention"], (enc, dec, crs)):
        got = np.array(entry["attn"], dtype=np.float64)
        assert got.shape == a.shape
        np.testing.assert_array_equal(got, rounded(a))
    e, d, c = p["attention"]
    assert (e["left_text"], e["right_text"]) == (SRC, SRC)
    assert (d["left_text"], d["right_text"]) == (TGT, TGT)
    assert (c["left_text"], c["right_text"]) == (TGT, SRC)  # left = decoder queries, right = source keys
    assert p["default_filter"] == "0"
    assert p["layer"] is None and p["heads"] is None
    assert p["include_layers"] == [0, 1]
    assert list(p) == ["attention", "default_filter", "root_div_id", "layer", "heads", "include_layers"]
    assert f'<div id="{p["root_div_id"]}"' in html
    assert '<select id="layer"></select>' in html
    assert '<select id="filter"><option value="0" selected>Encoder</option><option value="1">Decoder</option>' in html


def test_model_view_params_are_the_rounded_arrays_and_tokens():
    enc, dec, crs = attention(H=4)
    html = model_view_html(enc, dec, crs, SRC, TGT)
    p = params_of(html)
    assert [a["name"] for a in p["attention"]] == ["Encoder", "Decoder", "Cross"]
    for entry, a in zip(p["attention"], (enc, dec, crs)):
        np.testing.assert_array_equal(np.array(entry["attn"]), rounded(a))
    assert p["attention"][2]["left_text"] == TGT and p["attention"][2]["right_text"] == SRC
    assert p["display_mode"] == "light"
    assert p["include_layers"] == [0, 1]
    assert p["include_heads"] == [0, 1, 2, 3] and p["total_heads"] == 4
    assert 'id="layer"' not in html  # the model view has no layer menu
    assert '<select id="filter">' in html


def test_decimals_and_number_format():
    w = np.array([[[[0.0, 1.0, 0.5, 0.1234, 0.99961, 0.0004, 0.12, 1e-9]]]], dtype=np.float32)
    assert weights_json(w, 3) == "[[[[0,1000,500,123,1000,0,120,0]]]]"
    assert weights_json(w, 1) == "[[[[0,10,5,1,10,0,1,0]]]]"
    assert weights_json(w, 0) == "[[[[0,1,0,0,1,0,0,0]]]]"  # 0.5 rounds half to even, as np.round does
    assert weights_json(np.array([[[[-0.25, 2.5, -0.0001]]]]), 2) == "[[[[-25,250,0]]]]"
    enc, dec, crs = attention(S=9, T=7, seed=3)
    src, tgt = [f"s{i}" for i in range(9)], [f"t{i}" for i in range(7)]
    for decimals in (1, 2, 4):
        p = params_of(head_view_html(enc, dec, crs, src, tgt, decimals=decimals))
        for entry, a in zip(p["attention"], (enc, dec, crs)):
            np.testing.assert_array_equal(np.array(entry["attn"]), rounded(a, decimals))
    with pytest.raises(ValueError, match="decimals"):
        head_view_html(enc, dec, crs, src, tgt, decimals=-1)


def test_weights_are_printed_short_with_no_spaces():
    enc, dec, crs = attention(S=12, T=10, seed=1, spread=4.0)  # peaked: some weights round to 0
    html = head_view_html(enc, dec, crs, [f"s{i}" for i in range(12)], [f"t{i}" for i in range(10)])
    start = html.index('"attn":') + len('"attn":')
    text = html[start : html.index(',"left_text"', start)]  # the encoder's weights, as embedded
    assert " " not in text and "\n" not in text
    numbers = re.split(r"[\[\],]+", text.strip("[]"))
    assert len(numbers) == enc.size
    bad = [n for n in numbers if not re.fullmatch(r"0|[1-9]\d{0,2}|1000", n)]
    assert not bad, bad[:10]
    assert "0" in numbers  # small weights round to a bare 0


# ---------------------------------------------------------------------------------------------- options


def test_head_view_layer_and_heads_choose_what_is_shown_first():
    enc, dec, crs = attention(H=4)
    p = params_of(head_view_html(enc, dec, crs, SRC, TGT, layer=1, heads=[3, 1, 3]))
    assert p["layer"] == 1
    assert p["heads"] == [1, 3]  # sorted, each once
    assert np.array(p["attention"][0]["attn"]).shape == enc.shape  # the head view keeps every layer and head
    p = params_of(head_view_html(enc, dec, crs, SRC, TGT, layer=np.int64(0), heads=np.array([2])))
    assert p["layer"] == 0 and p["heads"] == [2]


def test_model_view_layer_and_heads_filter_the_grid():
    enc, dec, crs = attention(L_enc=3, L_dec=3, H=4)
    p = params_of(model_view_html(enc, dec, crs, SRC, TGT, layer=2, heads=[3, 0]))
    assert p["include_layers"] == [2]
    assert p["include_heads"] == [0, 3]
    assert p["total_heads"] == 4
    for entry, a in zip(p["attention"], (enc, dec, crs)):
        np.testing.assert_array_equal(np.array(entry["attn"]), rounded(a[2:3][:, [0, 3]]))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"layer": 2}, "layer 2 is out of range: there are 2 layers"),
        ({"layer": -1}, "layer -1 is out of range"),
        ({"heads": [0, 3]}, "head 3 is out of range: there are 3 heads"),
        ({"heads": []}, "heads is empty"),
        ({"heads": "01"}, "heads must be a list"),
    ],
)
@pytest.mark.parametrize("make", [head_view_html, model_view_html])
def test_bad_layer_or_heads_raise(make, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make(*attention(), SRC, TGT, **kwargs)


def test_stacks_with_different_layer_counts():
    enc, dec, crs = attention(L_enc=3, L_dec=2)
    head = params_of(head_view_html(enc, dec, crs, SRC, TGT, layer=2))
    assert head["include_layers"] == [0, 1, 2]  # one layer menu for all kinds
    d = np.array(head["attention"][1]["attn"])
    assert d.shape == (3, 3, 4, 4)
    np.testing.assert_array_equal(d[:2], rounded(dec))
    np.testing.assert_array_equal(d[2], 0)  # the decoder has no layer 2: drawn without lines
    np.testing.assert_array_equal(np.array(head["attention"][2]["attn"])[2], 0)
    model = params_of(model_view_html(enc, dec, crs, SRC, TGT))
    assert [len(a["attn"]) for a in model["attention"]] == [3, 2, 2]  # the grid shows each stack as it is
    with pytest.raises(ValueError, match=r"\b2\b.* decoder_self\b.*\b2\b"):
        model_view_html(enc, dec, crs, SRC, TGT, layer=2)


# ---------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda e, d, c: (e, d, np.ones((2, 3, 4, 7))), "cross has 7 source positions but 5 source tokens"),
        (lambda e, d, c: (e, d, np.ones((2, 3, 6, 5))), "cross has 6 target positions but 4 target tokens"),
        (lambda e, d, c: (e[:, :, :4], d, c), "encoder_self has 4 source positions but 5 source tokens"),
        (lambda e, d, c: (e[..., :4], d, c), "encoder_self has 4 source positions but 5 source tokens"),
        (lambda e, d, c: (e, d[:, :, :3, :3], c), "decoder_self has 3 target positions but 4 target tokens"),
        (lambda e, d, c: (e, d[:, :2], c), "decoder_self has 2 heads but encoder_self has 3"),
        (lambda e, d, c: (e, d, c[:, :2]), "cross has 2 heads but encoder_self has 3"),
        (lambda e, d, c: (e, d, c[:1]), "cross has 1 layers but decoder_self has 2"),
        (lambda e, d, c: (e[0], d, c), "encoder_self must be 4-D"),
        (lambda e, d, c: (e[:0], d, c), "encoder_self needs at least one layer and one head"),
        (lambda e, d, c: (np.full_like(e, np.nan), d, c), "encoder_self holds NaN"),
        (lambda e, d, c: (e.astype(str), d, c), "encoder_self must hold real numbers"),
    ],
)
@pytest.mark.parametrize("make", [head_view_html, model_view_html])
def test_mismatches_raise_value_error_naming_them(make, change, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make(*change(*attention()), SRC, TGT)


@pytest.mark.parametrize(
    "src, tgt, message",
    [
        (SRC[:4], TGT, "encoder_self has 5 source positions but 4 source tokens"),
        (SRC, TGT + ["x"], "decoder_self has 4 target positions but 5 target tokens"),
        ("the cat", TGT, "source_tokens must be a list of token strings"),
        (SRC, [], "target_tokens is empty"),
    ],
)
def test_token_count_mismatches_raise(src, tgt, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        head_view_html(*attention(), src, tgt)


# ---------------------------------------------------------------------------------------------- tokens


def test_word_piece_markers_are_prettified_as_bertviz_does():
    src = ["Ġthe", "▁cat", "sat</w>", "a▁b", "</s>"]
    p = params_of(head_view_html(*attention(), src, ["<s>", "Ġle", "chat", "x"]))
    assert p["attention"][0]["left_text"] == [" the", " cat", "sat", "a b", "</s>"]
    assert p["attention"][2]["left_text"] == ["<s>", " le", "chat", "x"]


@pytest.mark.parametrize("make", [head_view_html, model_view_html])
@pytest.mark.parametrize("offline", [True, False])
def test_hostile_tokens_stay_data(make, offline):
    src = [HOSTILE, "<!--", "a & b", 'say "hi"', "</SCRIPT >"]
    tgt = ["<s>", "it's", "\u2028\u2029", "<b>x</b>"]
    html = make(*attention(), src, tgt, offline=offline)
    assert "alert(1)</script>" not in html and "<script>alert" not in html
    assert "<!--" not in html and "</SCRIPT" not in html
    scripts = scripts_of(html)
    assert len(scripts) == (5 if offline else 3)  # d3, jQuery, shim, decoder, view / require.js, decoder, view
    view = scripts[-1][1]
    assert view.lstrip().startswith("/**")  # the whole of bertviz's script reached the parser as one element
    p = params_of(view)
    assert p["attention"][0]["left_text"] == src and p["attention"][2]["left_text"] == tgt
    assert p["attention"][2]["right_text"] == src


def test_each_page_gets_its_own_div_id():
    a = attention()
    ids = {params_of(make(*a, SRC, TGT))["root_div_id"] for make in (head_view_html, model_view_html) for _ in range(2)}
    assert len(ids) == 4
    assert all(re.fullmatch(r"bertviz-[0-9a-f]{32}", i) for i in ids)


# ---------------------------------------------------------------------------------------------- page and libraries

# The only addresses allowed in an offline page: XML namespaces and banners inside the inlined JavaScript.
ALLOWED_URLS = re.compile(r"https?://(www\.w3\.org/|d3js\.org\b|github\.com/tensorflow/tensor2tensor/)")


@pytest.mark.parametrize("make", [head_view_html, model_view_html])
def test_offline_page_references_nothing_online(make):
    html = make(*attention(), SRC, TGT)
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert '<meta charset="utf-8">' in html
    assert "cdnjs" not in html and "cdn." not in html
    assert not re.search(r"""\b(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.IGNORECASE)
    assert not any(attrs.get("src") for attrs, _ in scripts_of(html))  # every script is inline
    assert not re.search(r"require\.config\(\s*\{\s*paths", html)
    urls = re.findall(r"https?://[^\s\"')]*", html)
    assert [u for u in urls if not ALLOWED_URLS.match(u)] == []
    assert "d3js.org v5" in html and "jQuery v" in html  # the libraries are inlined
    assert "requirejs.config = function" in html  # and the require shim


@pytest.mark.parametrize("make", [head_view_html, model_view_html])
def test_online_page_loads_require_js_like_stock(make):
    enc, dec, crs = attention()
    html = make(enc, dec, crs, SRC, TGT, offline=False)
    srcs = [attrs.get("src") for attrs, _ in scripts_of(html)]
    assert srcs == [f"{CDN}/require.js/2.3.6/require.min.js", None, None]  # require.js, weight decoder, view
    assert f"d3: '{CDN}/d3/5.7.0/d3.min'" in html and f"{CDN}/jquery/2.0.0/jquery.min" in html
    assert "d3js.org v5" not in html and len(html) < 40_000
    p = params_of(html)
    np.testing.assert_array_equal(np.array(p["attention"][2]["attn"]), rounded(crs))


def test_library_text_is_cached():
    assets.offline_libraries.cache_clear()
    head_view_html(*attention(), SRC, TGT)
    model_view_html(*attention(), SRC, TGT)
    info = assets.offline_libraries.cache_info()
    assert (info.misses, info.hits) == (1, 1)


def test_missing_library_file_is_a_clear_error(monkeypatch, tmp_path):
    real = assets._package_dir
    monkeypatch.setattr(
        assets, "_package_dir", lambda module, dist: tmp_path if module == "mpld3" else real(module, dist)
    )
    assets.offline_libraries.cache_clear()
    try:
        with pytest.raises(BertvizAssetError, match=r"d3\.v5\.min\.js is missing: reinstall mpld3"):
            head_view_html(*attention(), SRC, TGT)
        head_view_html(*attention(), SRC, TGT, offline=False)  # the online page does not need it
    finally:
        assets.offline_libraries.cache_clear()
    monkeypatch.setattr(assets.importlib.util, "find_spec", lambda name: None)
    assets.view_js.cache_clear()
    try:
        with pytest.raises(BertvizAssetError, match="pip install bertviz "):
            head_view_html(*attention(), SRC, TGT, offline=False)
    finally:
        assets.view_js.cache_clear()


def test_building_a_page_imports_neither_torch_nor_bertviz():
    code = (
        "import sys, numpy as np\n"
        "from viz.bertviz_view import head_view_html, model_view_html\n"
        "a = np.full((1, 1, 2, 2), 0.5)\n"
        "assert 'd3js.org' in head_view_html(a, a, a, ['x', 'y'], ['u', 'v'])\n"
        "model_view_html(a, a, a, ['x', 'y'], ['u', 'v'])\n"
        "heavy = sorted(m for m in ('torch', 'bertviz', 'mpld3', 'matplotlib', 'streamlit', 'IPython') if m in sys.modules)\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_real_capture_renders(tiny, char_tokenizer):
    from model import capture

    cap = capture(tiny, char_tokenizer, "hello", target="olleh")  # 3 encoder layers, 2 decoder layers
    p = params_of(head_view_html(cap.encoder_self, cap.decoder_self, cap.cross, cap.source_tokens, cap.target_tokens))
    np.testing.assert_array_equal(np.array(p["attention"][0]["attn"]), rounded(cap.encoder_self))
    np.testing.assert_array_equal(np.array(p["attention"][2]["attn"])[:2], rounded(cap.cross))
    assert p["attention"][2]["right_text"] == cap.source_tokens


# ---------------------------------------------------------------------------------------------- size


@pytest.mark.parametrize("view", ["head", "model"])
def test_128_tokens_is_at_most_a_quarter_of_stock_bertviz(view):
    n = 128
    enc, dec, crs = attention(L_enc=2, L_dec=2, H=4, S=n, T=n, seed=7)  # near-uniform: the least compressible case
    tokens = [f"tok{i}" for i in range(n)]
    ours = (head_view_html if view == "head" else model_view_html)(enc, dec, crs, tokens, tokens)
    stock = stock_bertviz_html(view, (enc, dec, crs), tokens)
    assert len(ours.encode()) * 4 <= len(stock.encode()), (len(ours), len(stock))


@pytest.mark.parametrize("make", [head_view_html, model_view_html])
def test_the_chosen_kind_is_shown_first(make):
    enc, dec, crs = attention()
    for index, kind in enumerate(["Encoder", "Decoder", "Cross"]):
        assert params_of(make(enc, dec, crs, SRC, TGT, kind=kind))["default_filter"] == str(index)
    with pytest.raises(ValueError, match="Encoder, Decoder, Cross, got 'Self'"):
        make(enc, dec, crs, SRC, TGT, kind="Self")


def test_head_view_of_one_layer_sends_that_layer_alone():
    enc, dec, crs = attention(L_enc=3, L_dec=3, H=2, S=6, T=5, seed=3)
    full = head_view_html(enc, dec, crs, [*"abcde", "</s>"], ["<s>", *"wxyz"], layer=2)
    one = head_view_html(enc, dec, crs, [*"abcde", "</s>"], ["<s>", *"wxyz"], layer=2, only_layer=True)
    p = params_of(one)
    assert p["include_layers"] == [2] and p["layer"] == 2  # the menu names the real layer
    for entry, a in zip(p["attention"], (enc, dec, crs)):
        np.testing.assert_array_equal(np.array(entry["attn"], dtype=np.float64), rounded(a[2:3]))
    assert len(one) < len(full)


def test_bertviz_fits_counts_every_weight():
    from viz.attention_figs import BERTVIZ_MAX_WEIGHTS, bertviz_fits

    small = np.zeros((2, 2, 10, 10))
    assert bertviz_fits(small, small, small)
    side = int(np.sqrt(BERTVIZ_MAX_WEIGHTS / (6 * 8))) + 1  # one base-size stack of maps just over the limit
    assert not bertviz_fits(np.zeros((6, 8, side, side)))
