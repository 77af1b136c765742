"""The attribution page (issue 26) through AppTest: every method beside attention, the agreement table, links."""

import re

import numpy as np

from model import attribute, capture, load_checkpoint
from tests.apptest_helpers import ROOT, charts, messages, open_page
from tests.i18n_helpers import matching, msgid, msgid_starting, rendered
from tests.test_app_inside import arr

CROSS_AVERAGE = msgid("Cross-attention, layer {layer}, average of heads")
NO_SYMBOLS = msgid_starting("None of the {what}'s symbols")

REVERSE = ROOT / "checkpoints" / "reverse"


def bars(at) -> dict:
    return next(c for c in charts(at) if c["layout"]["title"]["text"].startswith("What explains output token"))


def test_default_view_shows_the_cheap_methods_beside_attention_and_computes_no_other():
    from ui.serving import caches

    caches.ATTRIBUTIONS.clear()
    at = open_page("attribution", "demo:reverse", text="abcd")
    assert not at.exception, at.exception
    fig = bars(at)
    names = [a["text"].replace("<br>", " ") for a in fig["layout"]["annotations"]]  # titles wrap to their panels
    assert names[:3] == ["Attention rollout", "Gradient × input", "Occlusion"]  # the registry's CHEAP methods
    assert names[3] == rendered(CROSS_AVERAGE, layer=1)
    computed = {key[3] for key in caches.ATTRIBUTIONS._values}  # (model, text, target, method, settings, changes)
    assert computed == {"rollout", "grad_x_input", "occlusion"}  # flow and integrated gradients only when picked
    model, tok = load_checkpoint(str(REVERSE))
    occ = attribute(model, tok, "abcd", method="occlusion")
    np.testing.assert_allclose(arr(fig["data"][2]["x"]), occ.scores[0], atol=1e-6)  # output token 0 by default
    cross = capture(model, tok, "abcd").cross[1].mean(0)
    np.testing.assert_allclose(arr(fig["data"][3]["x"]), cross[0], atol=1e-6)
    table = at.dataframe[0].value
    assert list(table.iloc[:, 0])[-2:] == [
        "Cross-attention, layer 0 (head average)",
        "Cross-attention, layer 1 (head average)",
    ]
    assert table.iloc[2, 1] == "1.000"  # occlusion against itself
    assert float(table.iloc[2, 2]) == 1.0  # "dcba" is the gold output; occlusion finds every mirrored letter


def test_bad_input_is_a_message_and_kept():
    at = open_page("attribution", "demo:reverse", text="ABC123")  # no symbol the model knows
    assert not at.exception, at.exception
    assert re.search(matching(NO_SYMBOLS), messages(at)) and not charts(at)
    assert at.sidebar.text_area[0].value == "ABC123"  # what was typed stays
    at2 = open_page("attribution", "demo:reverse", text="abcd", attr_tok="99", attr_head="x", attr_matrix="nope")
    assert not at2.exception, at2.exception
    assert at2.query_params["attr_tok"] == "0" and at2.query_params["attr_matrix"] == "occlusion"
    assert at2.query_params["attr_head"] == "average"


def test_link_round_trip():
    params = dict(text="abcdef", attr_tok="2", attr_layer="0", attr_head="1", attr_matrix="flow", attr_occ="pad",
                  attr_base="unk", attr_steps="16",
                  attr_methods="rollout,flow,grad_x_input,integrated_gradients,occlusion")  # fmt: skip
    at = open_page("attribution", "demo:reverse", **params)
    assert not at.exception, at.exception
    for key, value in params.items():
        assert at.query_params[key] == value, key
    fig = bars(at)
    assert re.match(matching("What explains output token {t} “{token}”?", t=2), fig["layout"]["title"]["text"])
    assert [a["text"].replace("<br>", " ") for a in fig["layout"]["annotations"]][5:] == [
        rendered("Cross-attention, layer {layer}, {head}", layer=0, head=rendered("head {h}", h=1)),
        rendered(CROSS_AVERAGE, layer=0),
    ]
    matrix = next(c for c in charts(at) if c["layout"]["title"]["text"] == "Attention flow")
    assert len(matrix["layout"]["yaxis"]["tickvals"]) == 7  # six letters and </s>
    # the page's own downloads (every chart also has its figure's: ui/shell/figure_download.py)
    labels = [b.proto.label for b in at.get("download_button") if not b.proto.id.endswith("_figdl_button")]
    assert labels == [rendered("Download the scores (.npz)"), rendered("Download the scores (.json)")]
