"""The "Inside attention" page through AppTest: the steps, the scale control, shapes, URL state, downloads."""

import base64
import io

import numpy as np
import pytest

from model import capture, load_checkpoint
from model.analysis import inside
from tests.apptest_helpers import chart_titles, charts, messages, open_page
from tests.browser_helpers import letters_checkpoint
from tests.i18n_helpers import rendered


@pytest.fixture(scope="module")
def letters(tmp_path_factory):
    return letters_checkpoint(tmp_path_factory.mktemp("inside"))


@pytest.fixture(scope="module")
def ckpt(letters):
    return f"path:{letters}"


def arr(value) -> np.ndarray:
    """A figure JSON field as an array: plotly writes numpy arrays as {dtype, bdata (base64), shape}."""
    if isinstance(value, dict) and "bdata" in value:
        a = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        return a.reshape([int(n) for n in str(value["shape"]).split(",")]) if value.get("shape") else a
    return np.asarray(value, dtype=float)


def focus(letters, kind: str, text: str = "cafe", target: str | None = None) -> tuple[int, int, int]:
    """The page's default (layer, head, query) for this input: its most spread-out row (inside.default_focus)."""
    model, tokenizer = load_checkpoint(letters)
    return inside.default_focus(getattr(capture(model, tokenizer, text, target=target), kind))


def chart(at, key: str) -> dict:
    """The figure of the chart whose title starts with `key`."""
    for c in charts(at):
        if c["layout"].get("title", {}).get("text", "").startswith(key):
            return c
    raise AssertionError(f"no chart titled {key!r}: {chart_titles(at)}")


def test_the_steps_show_the_real_numbers(ckpt, letters):
    at = open_page(
        "inside", ckpt, text="cafe", target="bead", in_kind="decoder_self", in_layer="2", in_head="1", in_query="2"
    )
    assert not at.exception, at.exception
    assert at.title[0].value == "Inside attention"
    model, tok = load_checkpoint(letters)
    cap = capture(model, tok, "cafe", target="bead", qkv=True)
    q, k = (a[2, 1] for a in cap.qkv["decoder_self"][:2])
    qk = chart(at, "Query and keys")
    np.testing.assert_allclose(arr(qk["data"][0]["z"]), q[2:3], atol=1e-6)
    np.testing.assert_allclose(arr(qk["data"][1]["z"]), k, atol=1e-6)
    weights = arr(chart(at, "Attention weights")["data"][0]["y"])
    np.testing.assert_allclose(weights, cap.decoder_self[2, 1, 2], atol=1e-5)  # the attention page's row
    assert chart(at, "Raw and scaled")["data"][1]["text"] == ["", "", "", "masked → −∞", "masked → −∞"]
    assert len(at.latex) == 7
    products = arr(chart(at, "q_i · k_i for key")["data"][0]["y"])
    key = int(np.argmax(cap.decoder_self[2, 1, 2]))  # by default the key the query attends to most
    np.testing.assert_allclose(products, q[2] * k[key], atol=1e-5)
    w_o, b_o = inside.output_projection(model, "decoder_self", 2)
    concat = chart(at, "Concatenation and W^O")
    np.testing.assert_allclose(
        arr(concat["data"][1]["z"])[0],
        inside.output_step(cap.head_outputs["decoder_self"][2], w_o, b_o, 2).output,
        atol=1e-5,
    )


def test_the_scale_control_compares_entropies(ckpt):
    at = open_page("inside", ckpt, text="cafe")
    assert len(chart(at, "Attention weights")["data"]) == 1
    at.toggle(key="in_noscale").set_value(True).run()
    names = [t["name"] for t in chart(at, "Attention weights")["data"]]
    assert names == ["softmax(q·k_j / √d_k)", "without 1/√d_k"]
    assert at.query_params["in_noscale"] == "1"
    labels = [m.label for m in at.metric]
    assert labels[:2] == ["Entropy with 1/√d_k", rendered("Entropy without it")]


def test_shapes_with_your_own_numbers(ckpt):
    at = open_page("inside", ckpt, text="cafe")
    mine = at.dataframe[0].value
    assert dict(zip(mine["formula"], mine["shape"]))["softmax(scores + mask)"] == "32 × 12 × 512 × 512"
    assert "384.0 MiB" in " ".join(m.value for m in at.markdown)
    at.number_input(key="in_len").set_value(1024).run()
    assert "1.5 GiB" in " ".join(m.value for m in at.markdown)  # twice the length, four times the memory
    assert at.query_params["in_len"] == "1024"
    live = at.dataframe[1].value  # cross by default: 5 decoder rows? the model's own output; 5 source keys
    assert live["shape"].iloc[6].endswith("× 5")
    at.number_input(key="in_h").set_value(10).run()
    assert not at.exception
    assert "d_model (768) must be divisible by the number of heads (10)" in messages(at)
    assert at.number_input(key="in_h").value == 10  # what the user typed stays


def test_a_link_reproduces_the_view_and_nonsense_falls_back(ckpt, letters):
    at = open_page(
        "inside",
        ckpt,
        text="cafe",
        target="bead",
        in_kind="encoder_self",
        in_layer="1",
        in_head="1",
        in_query="3",
        in_key="2",
        in_len="2048",
    )
    assert chart_titles(at)[0] == "Query and keys: Encoder self-attention, layer 1, head 1, query 3: e"
    assert chart(at, "q_i · k_i for key 2: f")
    assert at.number_input(key="in_len").value == 2048
    bad = open_page(
        "inside",
        ckpt,
        text="cafe",
        in_kind="bogus",
        in_layer="99",
        in_head="-1",
        in_query="x",
        in_key="1e9",
        in_len="-5",
        in_batch="99999999999",
        in_d="nan",
        in_noscale="perhaps",
    )
    assert not bad.exception, bad.exception
    layer, head, query = focus(letters, "cross")  # a bad value falls back to the page's default example
    assert chart_titles(bad)[0].startswith(
        f"Query and keys: Cross-attention (decoder → encoder), layer {layer}, head {head}, query {query}"
    )
    assert [bad.number_input(key=k).value for k in ("in_batch", "in_len", "in_d", "in_h")] == [32, 512, 768, 12]
    assert bad.query_params["in_kind"] == "cross" and not bad.error


def test_qkv_download_is_packed_on_request_and_holds_every_layer_and_head(ckpt, letters, deferred):
    at = open_page("inside", ckpt, text="cafe")
    labels = [b.proto.label for b in at.get("download_button")]
    assert (
        rendered("Download Q, K, V of every layer and head (.npz)") in labels
        and rendered("Download attention and PE (.npz)") in labels
    )
    model, tok = load_checkpoint(letters)
    expected = capture(model, tok, "cafe", qkv=True)
    arrays = np.load(io.BytesIO(deferred["qkv.npz"]()))  # what pressing the button sends
    for kind, (q, k, v) in expected.qkv.items():
        for name, value in (("q", q), ("k", k), ("v", v)):
            np.testing.assert_allclose(arrays[f"{kind}_{name}"], value, atol=1e-6)


def test_bad_input_is_named(ckpt):
    at = open_page("inside", ckpt)
    at.sidebar.text_area(key="text").set_value("XYZ").run()
    assert not at.exception and "None of the input's symbols" in messages(at) and not charts(at)


@pytest.mark.parametrize(
    "params",
    [
        {"in_kind": "decoder_self", "in_query": "7", "in_key": "-2"},  # the decoder input has 5 tokens (<s> b e a d)
        {"in_d": "inf", "in_h": "0", "in_batch": "1.5"},
        {"in_layer": "2", "in_head": "2", "in_noscale": "1"},  # the encoder has 2 layers, the model 2 heads
    ],
)
def test_each_bad_selection_falls_back_alone(ckpt, letters, params):
    at = open_page("inside", ckpt, text="cafe", target="bead", in_kind=params.pop("in_kind", "encoder_self"), **params)
    assert not at.exception, at.exception
    assert not at.error
    kind = at.radio(key="in_kind").value
    assert 0 <= at.selectbox(key="in_layer").value < (2 if kind == "encoder_self" else 3)
    assert at.selectbox(key="in_head").value in (0, 1)
    if "in_query" in params:
        assert (kind, at.selectbox(key="in_query").value) == ("decoder_self", focus(letters, kind, target="bead")[2])
        assert 0 <= at.selectbox(key="in_key").value < 5
    if "in_d" in params:
        assert [at.number_input(key=k).value for k in ("in_batch", "in_d", "in_h")] == [32, 768, 12]
    if "in_layer" in params:
        default = focus(letters, "encoder_self", target="bead")[:2]
        assert (at.selectbox(key="in_layer").value, at.selectbox(key="in_head").value) == default
        assert at.toggle(key="in_noscale").value is True  # the valid part of the link is kept


def test_presentation_mode_labels_as_many_keys_as_a_projector_shows(tmp_path):
    """40 keys: in presentation mode the chart is cut to the screen's height and its labels are 18 px, so the key and
    value charts name every step-th key (viz.tokens.thin_row_labels through ui/shell/presentation.show); every key's
    vector is still drawn. Outside it, the same charts at their own height and 14 px name every key they have room for
    (the first chart, cut most, more of them)."""
    long = letters_checkpoint(tmp_path, max_len=48)
    text = "abcdefgh" * 5
    step = {}
    for mode in ({"present": "1"}, {}):
        at = open_page("inside", f"path:{long}", text=text, **mode)
        assert not at.exception, at.exception
        keys, values = chart(at, "Query and keys"), chart(at, "Values and")
        for name, axis, z in (("keys", keys["layout"]["yaxis2"], keys["data"][1]["z"]),
                              ("values", values["layout"]["yaxis"], values["data"][0]["z"])):  # fmt: skip
            vals = axis["tickvals"]
            assert arr(z).shape[0] == 41 and vals[0] == 0, name  # the text's 40 keys and </s>, each drawn
            assert vals == list(range(0, 41, vals[1] - vals[0])), name
            step[name, bool(mode)] = vals[1] - vals[0]
    assert step["keys", True] >= 2 and step["values", True] >= 2
    assert step["keys", False] < step["keys", True] and step["values", False] <= step["values", True]
