"""Interventions on the pages (issue 14): heads switched off on the attention and decoding pages, head importance,
positions changed at inference, the three reverse models; every change in the link, hostile links answered."""

import json

import numpy as np
import pytest

from i18n import _
from model import capture, greedy_decode, load_checkpoint
from model.analysis.importance import head_importance, output_log_probs
from model.checkpoints.demos import Demo, list_demos
from model.interventions import Interventions
from tests.apptest_helpers import chart_titles, charts, messages, open_page, shown
from tests.browser_helpers import letters_checkpoint
from ui.shell.shapes import WORDS
from ui.views.positional_interventions import PANEL_TITLES


def decode(model, tokenizer, text, changes=Interventions(), top_k=5, prefix=()):
    """Greedy decoding with `changes` applied at every step, as the pages ask for it."""
    return greedy_decode(model, tokenizer, text, top_k=top_k, prefix=prefix, interventions=changes)


TWO_CROSS = [("cross", 2, 0), ("cross", 2, 1)]  # every head of the letters model's last cross layer


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return letters_checkpoint(tmp_path_factory.mktemp("interventions"))


@pytest.fixture(scope="module")
def letters(ckpt):
    return load_checkpoint(ckpt)


def figure(at, title_start):
    return next(c for c in charts(at) if c["layout"]["title"]["text"].startswith(title_start))


def values(trace_field):
    """A figure's array field as numpy (plotly sends numpy arrays as {dtype, bdata})."""
    if isinstance(trace_field, dict):
        import base64

        flat = np.frombuffer(base64.b64decode(trace_field["bdata"]), dtype=trace_field["dtype"])
        return flat.reshape([int(n) for n in str(trace_field["shape"]).split(",")]) if "shape" in trace_field else flat
    return np.asarray(trace_field, dtype=float)


def expected_change(letters, text, heads):
    model, tokenizer = letters
    plain, changed = capture(model, tokenizer, text), capture(model, tokenizer, text, ablate=heads)
    return changed, output_log_probs(changed, 2) - output_log_probs(plain, 2)


def test_ticking_heads_changes_the_attention_page_and_its_link(ckpt, letters, deferred):
    at = open_page("attention", f"path:{ckpt}", text="cafe")
    assert not at.exception and "heads off" not in " ".join(m.value for m in at.markdown)
    at.session_state["att_off_open"] = True  # open the "Switch heads off" expander
    at.run()
    at.button_group(key="att_off_c2").set_value([0, 1]).run()  # cross is the kind shown first; its layer 2
    assert not at.exception, at.exception
    assert at.query_params["att_off"] == "c2.0,c2.1"
    changed, delta = expected_change(letters, "cafe", TWO_CROSS)
    bars = figure(at, "Change in each output token")
    np.testing.assert_allclose(values(bars["data"][0]["y"]), delta, atol=1e-4)
    assert f"{delta.sum():+.3f}" in bars["layout"]["title"]["text"]
    heat = figure(at, "Cross-attention")  # the changed model's attention (head average of the last layer)
    np.testing.assert_allclose(values(heat["data"][0]["z"]), changed.cross[2].mean(0), atol=1e-5)
    new = decode(*letters, "cafe", Interventions.make(TWO_CROSS)).text
    assert any(f"With 2 heads off the model writes {new} (" in shown(m.value) for m in at.markdown)
    saved = json.loads(deferred["capture.json"]())  # the download says what was changed
    assert saved["interventions"] == {"ablate": [["cross", 2, 0], ["cross", 2, 1]]}

    again = open_page("attention", f"path:{ckpt}", text="cafe", att_off="c2.0,c2.1")  # the link, in a new session
    assert chart_titles(again) == chart_titles(at)
    np.testing.assert_allclose(values(figure(again, "Change")["data"][0]["y"]), delta, atol=1e-4)
    at.button(key="att_off_reset").click().run()  # every head on: the plain page again
    assert "att_off" not in at.query_params and not any("heads off" in m.value for m in at.markdown)


def test_shortcuts_switch_a_whole_layer_or_kind(ckpt):
    at = open_page("attention", f"path:{ckpt}", text="cafe", att_off="e0.1")
    at.session_state["att_off_open"] = True
    at.run()
    at.segmented_control(key="att_off_kind").set_value("decoder_self").run()
    at.button(key="att_off_d1_all").click().run()
    assert at.query_params["att_off"] == "d1.0,d1.1,e0.1"
    assert at.button_group(key="att_off_d1").value == [0, 1]
    at.button(key="att_off_kind_off").click().run()
    assert at.query_params["att_off"] == "d0.0,d0.1,d1.0,d1.1,d2.0,d2.1,e0.1"
    at.button(key="att_off_d1_none").click().run()
    assert at.query_params["att_off"] == "d0.0,d0.1,d2.0,d2.1,e0.1"


@pytest.mark.parametrize(
    "raw", ["c9.0,zz,<script>alert(1)</script>,e0.0", "e0.0," + "c1.1" * 2000, "e0.0,c-1.0,c1.99999,d1.2"]
)
def test_a_hostile_heads_link_is_named_and_left_out(ckpt, raw):
    at = open_page("attention", f"path:{ckpt}", text="cafe", att_off=raw)
    assert not at.exception, at.exception
    assert "heads that this model does not have" in messages(at) and "<script>" not in messages(at)
    assert at.query_params.get("att_off", "") == ("" if len(raw) > 4096 else "e0.0")  # what is kept, and no more


def test_head_importance_is_measured_on_request_and_a_click_switches_the_top_head(ckpt, letters):
    at = open_page("attention", f"path:{ckpt}", text="bead")
    at.session_state["att_importance_open"] = True
    at.run()
    assert not any(t.startswith("Drop in the output") for t in chart_titles(at))  # nothing measured unasked
    at.button(key="att_importance_go").click().run()
    panels = figure(at, "Drop in the output")
    found = head_importance(*letters, "bead")
    heat = [t for t in panels["data"] if t["type"] == "heatmap"]
    for trace, kind in zip(heat, ("encoder_self", "decoder_self", "cross")):
        np.testing.assert_allclose(values(trace["z"]), found.drop[kind], atol=1e-4)
    kind, layer, head, _ = found.ranked()[0]
    at.button(key="att_importance_top").click().run()
    code = {"encoder_self": "e", "decoder_self": "d", "cross": "c"}[kind]
    assert at.query_params["att_off"] == f"{code}{layer}.{head}"
    assert at.button(key="att_importance_top").disabled  # it is off now


def test_the_decoding_page_decodes_the_changed_model(ckpt, letters, deferred):
    at = open_page("decoding", f"path:{ckpt}", text="cafe", dec_off="c2.0,c2.1")
    assert not at.exception, at.exception
    trace = decode(*letters, "cafe", Interventions.make(TWO_CROSS))
    assert at.markdown[1].value.startswith(f"**Step 1 of {len(trace.steps)}**")  # after the one-line summary
    _, delta = expected_change(letters, "cafe", TWO_CROSS)
    np.testing.assert_allclose(values(figure(at, "Change")["data"][0]["y"]), delta, atol=1e-4)
    saved = json.loads(deferred["decoding.json"]())
    assert saved["interventions"] == {"ablate": [["cross", 2, 0], ["cross", 2, 1]]} and saved["text"] == trace.text
    at.button(key="dec_next").click().run()
    assert at.query_params["dec_off"] == "c2.0,c2.1" and at.query_params["dec_step"] == "1"


@pytest.fixture(scope="module")
def roomy(tmp_path_factory):
    """A letters model with room to shift positions (max_len 40)."""
    return _letters(tmp_path_factory.mktemp("roomy"), "sinusoidal", 40, {"examples": ["cafe"]})


def test_positions_at_inference_on_any_model(roomy):
    at = open_page("positional", f"path:{roomy}", text="cafe", pe_view="infer", pe_pos="shifted", pe_shift="3")
    assert not at.exception, at.exception
    model = load_checkpoint(roomy)
    changed = decode(*model, "cafe", Interventions.make(positional="shifted", shift=3))
    plain = decode(*model, "cafe")
    assert (
        shown(at.markdown[0].value).endswith(f"it writes {changed.text or '∅'}.") and plain.text in at.markdown[0].value
    )
    assert "Not a shipped demo" in " ".join(c.value for c in at.caption)
    cross = _(WORDS["encoder-decoder"].attention)  # an encoder-decoder's panels: its cross-attention
    assert chart_titles(at)[:2] == [_(t).format(attention=cross) for t in PANEL_TITLES]
    at.segmented_control(key="pe_pos").set_value("shuffled").run()
    assert at.query_params["pe_pos"] == "shuffled" and "pe_shift" not in at.query_params


def test_hostile_positional_links_fall_back(roomy, ckpt):
    at = open_page("positional", f"path:{roomy}", text="cafe", pe_view="infer", pe_pos="<x>", pe_shift="-4e9")
    assert not at.exception and at.query_params["pe_pos"] == "off"
    at = open_page("positional", f"path:{roomy}", text="cafe", pe_view="infer", pe_pos="shifted", pe_shift="99999")
    assert not at.exception and at.slider(key="pe_shift").value == 5  # out of range: the default shift
    at = open_page("positional", f"path:{ckpt}", text="abcdefghabc", pe_view="infer", pe_pos="shifted")
    assert not at.exception and "no room to shift" in messages(at)  # 11 letters and </s> fill max_len 12
    at = open_page("positional", f"path:{roomy}", text="cafe", pe_view="infer", pe_pos="shuffled", pe_seed="1e99")
    assert not at.exception and at.number_input(key="pe_seed").value == 0


def test_the_reverse_demo_collapses_without_positions():
    if not any(d.name == "reverse" for d in list_demos()):
        pytest.skip("checkpoints/reverse is not there")
    at = open_page("positional", "demo:reverse", text="stressed", pe_view="infer", pe_pos="off")
    assert not at.exception, at.exception
    verdict = next(m.value for m in at.markdown if m.value.startswith("Verdict"))
    before, after = (float(v) for v in __import__("re").findall(r"([\d.]+)%", verdict)[:2])
    assert before >= 98 and after < 20, verdict  # the claim, measured on 200 fresh examples
    at.segmented_control(key="pe_pos").set_value("shifted").run()
    at.slider(key="pe_shift").set_value(1).run()
    assert not at.exception, at.exception
    shifted = next(m.value for m in at.markdown if m.value.startswith("Verdict"))
    assert shifted != verdict  # a verdict of its own for the shift


def reverse_card(positional):
    return {"task": "reverse", "seed": 0, "recipe": {"train_size": 50}, "config": {"positional": positional}}


def test_the_reverse_models_side_by_side(tmp_path, monkeypatch):
    from ui.views import positional_models

    sinusoidal = letters_checkpoint(tmp_path / "s", card=reverse_card("sinusoidal"))
    learned = _letters(tmp_path / "l", "learned", 64, reverse_card("learned"))
    alibi = _letters(tmp_path / "a", "alibi", 64, reverse_card("alibi"))
    relative = _letters(tmp_path / "r", "relative", 64, reverse_card("relative"))
    demos = [
        Demo("reverse", sinusoidal, reverse_card("sinusoidal")),
        Demo("reverse_learned", learned, reverse_card("learned")),
        Demo("reverse_alibi", alibi, reverse_card("alibi")),
        Demo("reverse_relative", relative, reverse_card("relative")),
    ]
    monkeypatch.setattr(positional_models, "list_demos", lambda: demos)
    at = open_page("positional", f"path:{sinusoidal}", text="cafe", pe_view="models")
    assert not at.exception, at.exception
    assert "the reverse model with None, RoPE" in messages(at)  # the models not there are named
    assert [m.label for m in at.metric] == ["Sinusoidal (fixed)", "Learned", "ALiBi", "T5 relative bias"]
    maps = charts(at)  # one chart a row, one colour bar: cosine (sinusoidal, learned), bias (alibi, relative)
    assert [[a["text"] for a in m["layout"]["annotations"]] for m in maps] == [
        ["Sinusoidal (fixed)", "Learned"],
        ["ALiBi", "T5 relative bias"],
    ]
    model, _ = load_checkpoint(learned)
    table = model.src_pe.table.detach().numpy()[:40]
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    np.testing.assert_allclose(values(maps[0]["data"][1]["z"]), unit @ unit.T, atol=1e-5)
    assert all(t["coloraxis"] == "coloraxis" for m in maps for t in m["data"])  # one range a row: equal colours
    assert (maps[0]["layout"]["coloraxis"]["cmin"], maps[0]["layout"]["coloraxis"]["cmax"]) == (-1, 1)
    rel = load_checkpoint(relative)[0].src_pe.relative_attention_bias.weight.detach().numpy().mean(axis=1)
    assert values(maps[1]["data"][1]["z"])[0, 0] == pytest.approx(rel[0], abs=1e-5)  # bucket 0: distance 0
    both = np.concatenate([values(t["z"]).ravel() for t in maps[1]["data"]])
    assert (maps[1]["layout"]["coloraxis"]["cmin"], maps[1]["layout"]["coloraxis"]["cmax"]) == pytest.approx(
        (both.min(), both.max())
    )
    monkeypatch.setattr(positional_models, "list_demos", lambda: [])
    at.run()
    assert not charts(at) and "Sinusoidal (fixed), Learned, None" in messages(at)


def _letters(folder, positional, max_len, card):
    from model import Tokenizer, TransformerConfig, Vocab, build_model, save_checkpoint

    vocab = Vocab.build("abcdefgh", level="char")
    config = TransformerConfig.preset(
        "tiny", src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), max_len=max_len, n_heads=2, positional=positional
    )
    save_checkpoint(build_model(config, seed=1), Tokenizer(vocab, vocab), folder, card=card)
    return folder
