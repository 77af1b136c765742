"""Issue 15's views through AppTest: decoding strategies, two models compared, attention during training."""

import base64
import csv
import io
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as hst

from model import beam_search, capture, load_checkpoint, sample
from model.analysis.compare import decoder_input_text
from model.checkpoints.snapshots import list_snapshots
from tasks import train as train_mod
from tests.apptest_helpers import chart_titles, charts, messages, open_page, shown
from tests.browser_helpers import letters_checkpoint
from tests.i18n_helpers import rendered


def letters_like(folder, seed: int, **overrides):
    """Another random letters model (same vocabulary as letters_checkpoint), other weights or shape."""
    from model import Tokenizer, TransformerConfig, Vocab, build_model, save_checkpoint

    vocab = Vocab.build("abcdefgh", level="char")
    shape = {"n_heads": 2, "n_encoder_layers": 2, "n_decoder_layers": 3, "max_len": 12, **overrides}
    config = TransformerConfig.preset("tiny", src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), **shape)
    path = folder / f"letters_{seed}"
    save_checkpoint(build_model(config, seed=seed), Tokenizer(vocab, vocab), path, card={"examples": ["cafe"]})
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("strategies")
    return {
        "a": letters_checkpoint(folder),
        "b": letters_like(folder, seed=1),
        "deeper": letters_like(folder, seed=2, n_decoder_layers=2, n_heads=4),
        "shorter": letters_like(folder, seed=3, max_len=6),
    }


def caption(at) -> str:
    return " ".join(c.value for c in at.caption)


def field(trace: dict, name: str = "z") -> np.ndarray:
    """A trace's field as the browser gets it (plotly sends numpy arrays as base64 typed arrays)."""
    value = trace[name]
    if isinstance(value, dict):
        shape = [int(n) for n in str(value.get("shape", "-1")).split(",")]
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"])).reshape(shape)
    return np.asarray(value)


# ------------------------------------------------------------------ decoding strategies


def test_beam_search_shows_its_tree_and_the_chosen_hypothesis_and_keeps_the_link(models, deferred):
    at = open_page("decoding", f"path:{models['a']}", text="cafe", dec_strategy="beam", dec_beam="3", dec_lp="0.8")
    assert not at.exception, at.exception
    model, tokenizer = load_checkpoint(models["a"])
    trace = beam_search(model, tokenizer, "cafe", beam_size=3, length_penalty=0.8)
    tree, alignment = charts(at)
    assert tree["layout"]["title"]["text"].startswith("Beam size 3, length penalty 0.8")
    drawn = sum(len(field(t, "x")) for t in tree["data"] if t.get("mode") == "markers+text")
    assert drawn == sum(len(s.live) + len(s.finished) + len(s.pruned) for s in trace.steps)
    assert f"**Best hypothesis:** {trace.text or '∅'} · score {trace.score:.3f}" in at.markdown[0].value
    assert len(alignment["layout"]["yaxis"]["ticktext"]) == len(trace.output_tokens)  # one row per written token
    assert at.query_params["dec_strategy"] == "beam" and at.query_params["dec_beam"] == "3"
    assert at.query_params["dec_lp"] == "0.8"
    rows = list(csv.DictReader(io.StringIO(deferred["beam.csv"]())))
    assert len(rows) == len(trace.tree()["step"])
    assert json.loads(deferred["beam.json"]())["text"] == trace.text

    at.select_slider(key="dec_bstep").set_value(1).run()
    at.selectbox(key="dec_blayer").set_value(0).run()
    table = at.dataframe[0].value
    link = {k: at.query_params[k] for k in at.query_params if k != "model"}
    assert link["dec_bstep"] == "1" and link["dec_blayer"] == "0"
    linked = open_page("decoding", at.query_params["model"], **link)  # the link shows the same step and layer
    assert chart_titles(linked) == chart_titles(at) and linked.dataframe[0].value.equals(table)
    at.number_input(key="dec_beam").set_value(1).run()  # beam size 1: greedy decoding's output
    assert at.query_params["dec_beam"] == "1"
    greedy = capture(model, tokenizer, "cafe")
    assert (
        f"**Best hypothesis:** {tokenizer.target.detokenize(greedy.target_tokens[1:]) or '∅'}" in at.markdown[0].value
    )
    at.segmented_control(key="dec_strategy").set_value("greedy").run()
    assert len(charts(at)) == 4 and "dec_strategy" not in at.query_params  # the greedy page as it was


def test_sampling_draws_the_same_tokens_from_the_same_link(models):
    params = dict(text="cafe", dec_strategy="sample", dec_temp="2.0", dec_seed="5", dec_sk="4")
    at = open_page("decoding", f"path:{models['a']}", **params)
    assert not at.exception, at.exception
    model, tokenizer = load_checkpoint(models["a"])
    drawn = sample(model, tokenizer, "cafe", temperature=2.0, top_k=4, seed=5)
    assert f"Output: {drawn.text or '∅'}" in caption(at)
    overview = next(c for c in charts(at) if c["layout"]["title"]["text"].startswith("Drawn with temperature 2.0"))
    assert len(field(overview["data"][0], "x")) == len(drawn.steps)
    assert not [b for b in at.selectbox if b.key and b.key.startswith("dec_pick_")]  # forcing is greedy's
    boxes = [e.label for e in at.expander]
    assert "Greedy decoding" not in boxes and "<s>, </s>, <unk>" in boxes  # greedy's explanation is greedy's too
    greedy = open_page("decoding", f"path:{models['a']}", text="cafe")
    assert "Greedy decoding" in [e.label for e in greedy.expander]
    again = open_page("decoding", f"path:{models['a']}", **params)
    assert caption(again) == caption(at)
    at.number_input(key="dec_seed").set_value(6).run()
    other = sample(model, tokenizer, "cafe", temperature=2.0, top_k=4, seed=6)
    assert at.query_params["dec_seed"] == "6" and f"Output: {other.text or '∅'}" in caption(at)


@pytest.mark.parametrize(
    ("params", "named"),
    [
        (dict(dec_strategy="beam", dec_beam="99", dec_lp="abc"), ["the beam size", "the length penalty"]),
        (dict(dec_strategy="sample", dec_temp="nan", dec_sp="0", dec_sk="-2"), ["the temperature", "top-p", "top-k"]),
        (dict(dec_strategy="bogus"), ["the decoding strategy"]),
    ],
)
def test_a_bad_value_in_a_link_is_named_and_replaced(models, params, named):
    at = open_page("decoding", f"path:{models['a']}", text="cafe", **params)
    assert not at.exception, at.exception
    for what in named:
        assert f"The link's value for {what} is not valid here" in messages(at)
    assert charts(at)  # the page still shows the strategy with its defaults
    if "dec_beam" in params:
        assert at.query_params["dec_beam"] == "4" and at.query_params["dec_lp"] == "0.6"


JUNK = hst.one_of(
    hst.text(max_size=12),
    hst.integers(-(10**12), 10**12).map(str),
    hst.floats(allow_nan=True, allow_infinity=True).map(repr),
)
BOUNDS = {"dec_beam": (1, 8), "dec_lp": (0, 2), "dec_temp": (0, 5), "dec_sk": (0, 11), "dec_sp": (0.01, 1),
          "dec_seed": (0, 2**31 - 1)}  # fmt: skip


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate])
@given(strategy=hst.sampled_from(["beam", "sample"]), values=hst.fixed_dictionaries({k: JUNK for k in BOUNDS}))
def test_any_value_in_a_strategy_link_gives_a_valid_setting_and_no_traceback(models, strategy, values):
    at = open_page("decoding", f"path:{models['a']}", text="cafe", dec_strategy=strategy, **values)
    assert not at.exception, at.exception
    assert charts(at)
    for box in at.number_input:
        lo, hi = BOUNDS[box.key]
        assert lo <= box.value <= hi and at.query_params[box.key] == str(box.value)


# ------------------------------------------------------------------ two models


def test_two_models_with_the_same_shape_are_subtracted(models, deferred):
    at = open_page("compare", f"path:{models['a']}", text="cafe", model_b=f"path:{models['b']}", cmp_head="1")
    assert not at.exception, at.exception
    (fig,) = charts(at)
    a_model, tok = load_checkpoint(models["a"])
    b_model, _ = load_checkpoint(models["b"])
    cap_a = capture(a_model, tok, "cafe")
    cap_b = capture(b_model, tok, "cafe", target=decoder_input_text(cap_a, tok.target.detokenize))  # A's output
    z = [field(t) for t in fig["data"] if t["type"] == "heatmap"]
    np.testing.assert_allclose(z[0], cap_a.cross[2, 1], atol=1e-6)
    np.testing.assert_allclose(z[2], cap_a.cross[2, 1] - cap_b.cross[2, 1], atol=1e-6)
    assert at.query_params["model_b"] == f"path:{models['b']}" and at.query_params["cmp_head"] == "1"
    arrays = np.load(io.BytesIO(deferred["comparison.npz"]()))
    np.testing.assert_allclose(arrays["a_minus_b"], cap_a.cross[2, 1] - cap_b.cross[2, 1], atol=1e-6)
    at.radio(key="cmp_kind").set_value("encoder_self").run()
    at.selectbox(key="cmp_layer").set_value(0).run()
    assert chart_titles(at) == ["Encoder self, layer 0, head 1"] and at.query_params["cmp_layer"] == "0"
    link = {k: at.query_params[k] for k in at.query_params if k != "model"}  # the whole URL
    linked = open_page("compare", at.query_params["model"], **link)
    assert chart_titles(linked) == chart_titles(at)


def test_two_models_of_other_shapes_are_explained_and_both_shown(models):
    at = open_page("compare", f"path:{models['a']}", text="cafe", model_b=f"path:{models['deeper']}", cmp_layer="2")
    assert not at.exception, at.exception
    assert "A has 3 layers for this kind of attention, B has 2" in messages(at)
    assert "A has 2 heads per layer, B has 4" in messages(at)
    titles = chart_titles(at)
    assert len(titles) == 2 and titles[0].startswith("A: letters") and titles[1].startswith("B: letters_2")
    # each chart names its model; the kind, a layer both have and the heads are said once above both
    assert any(shown(m.value).endswith("layer 1, average of heads") for m in at.markdown)
    at.radio(key="cmp_input").set_value("own").run()  # each reads its own output: rows differ too
    assert len(charts(at)) == 2 and not at.exception


# ------------------------------------------------------------------ attention during training


@pytest.fixture(scope="module")
def snapshot_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("training") / "run"
    train_mod.main(["--task", "reverse", "--out", str(out), "--preset", "tiny", "--d-model", "24", "--heads", "2",
                    "--steps", "8", "--batch-size", "16", "--warmup", "4", "--train-size", "200",
                    "--eval-examples", "0", "--report-examples", "10", "--no-progress", "--snapshots", "3"])  # fmt: skip
    return out


def test_what_only_model_b_cuts_from_the_input_is_said_as_model_bs(models):
    at = open_page("compare", f"path:{models['a']}", text="cafebead", model_b=f"path:{models['shorter']}")
    assert not at.exception, at.exception
    said = [w.value for w in at.warning]
    assert any(w.startswith("Model B: The input has 8 tokens but this model reads at most 5") for w in said), said
    assert not any("reads at most 11" in w for w in said)  # A reads all 8 tokens: nothing to say about A
    assert len(charts(at)) >= 2  # both models are still drawn, B on what it kept
    same = open_page("compare", f"path:{models['a']}", text="cafebead", model_b=f"path:{models['b']}")
    assert not [w.value for w in same.warning if w.value.startswith("Model B")]


def test_the_training_slider_shows_each_snapshots_attention_and_scores(snapshot_run, deferred):
    at = open_page("training", f"path:{snapshot_run}", text="abcd")
    assert not at.exception, at.exception
    snaps = list_snapshots(snapshot_run)
    heat, curve = charts(at)
    assert heat["layout"]["title"]["text"].startswith("Step 0 (exact match")  # opens at the first snapshot
    assert rendered("the gold target of this input") in caption(at)  # every snapshot reads dcba
    assert [t["name"] for t in curve["data"]] == [
        "exact match (held-out)",
        "alignment, layer 1 (held-out)",
        "alignment of this input, layer 1",
    ]
    assert list(field(curve["data"][0], "customdata")) == [0, 4, 8]
    assert list(field(curve["data"][0], "y")) == [s.exact_match for s in snaps.items]
    at.select_slider(key="trn_step").set_value(4).run()
    assert chart_titles(at)[0].startswith("Step 4 (exact match") and at.query_params["trn_step"] == "4"
    model, tokenizer = load_checkpoint(snaps.items[1].path)
    expected = capture(model, tokenizer, "abcd", target="dcba").cross[1].mean(0)
    np.testing.assert_allclose(field(charts(at)[0]["data"][0]), expected, atol=1e-6)
    rows = list(csv.DictReader(io.StringIO(deferred["snapshots.csv"]())))
    assert [r["step"] for r in rows] == ["0", "4", "8"] and rows[1]["held_out_exact_match"] == str(
        snaps.items[1].exact_match
    )
    arrays = np.load(io.BytesIO(deferred["snapshots_cross.npz"]()))
    np.testing.assert_allclose(arrays["cross"][1, 1].mean(0), expected, atol=1e-6)  # (snapshot, L, H, T, S)
    linked = open_page("training", f"path:{snapshot_run}", text="abcd", trn_step="4", trn_head="0")
    assert chart_titles(linked)[0].startswith("Step 4") and chart_titles(linked)[0].endswith("head 0")
    bad = open_page("training", f"path:{snapshot_run}", text="abcd", trn_step="5", trn_layer="x")
    assert not bad.exception and chart_titles(bad)[0].startswith("Step 0")


def test_play_through_training_animates_every_snapshots_attention(snapshot_run):
    at = open_page("training", f"path:{snapshot_run}", text="abcd", trn_step="4")
    assert not at.exception and "frames" not in charts(at)[0]  # the step's heatmap alone by default
    at.toggle(key="trn_play").set_value(True).run()
    assert not at.exception, at.exception
    assert at.query_params["trn_play"] == "1" and at.query_params["trn_step"] == "4"
    heat, curve = charts(at)
    snaps = list_snapshots(snapshot_run)
    assert [f["name"] for f in heat["frames"]] == ["0", "4", "8"]  # one frame per snapshot, in order
    assert [b["label"] for b in heat["layout"]["updatemenus"][0]["buttons"]] == ["▶ Play", "❚❚ Pause"]
    assert heat["layout"]["sliders"][0]["active"] == 1  # the step chosen on the page comes first
    for frame, snap in zip(heat["frames"], snaps.items, strict=True):  # each frame: that snapshot, run here
        model, tokenizer = load_checkpoint(snap.path)
        expected = capture(model, tokenizer, "abcd", target="dcba").cross[1].mean(0)
        np.testing.assert_allclose(field(frame["data"][0]), expected, atol=1e-6)
        assert frame["layout"]["title"]["text"].startswith(f"Step {snap.step} (exact match")
    np.testing.assert_allclose(field(heat["data"][0]), field(heat["frames"][1]["data"][0]))
    at.selectbox(key="trn_head").set_value(0).run()  # the head chosen: every frame shows it
    frames = charts(at)[0]["frames"]
    model, tokenizer = load_checkpoint(snaps.items[2].path)
    expected = capture(model, tokenizer, "abcd", target="dcba").cross[1][0]
    np.testing.assert_allclose(field(frames[2]["data"][0]), expected, atol=1e-6)
    linked = open_page("training", f"path:{snapshot_run}", text="abcd", trn_play="1")
    assert len(charts(linked)[0]["frames"]) == 3


def test_a_model_without_snapshots_says_how_to_make_them(models):
    at = open_page("training", f"path:{models['a']}", text="cafe")
    assert not at.exception and not charts(at)
    assert "--snapshots 8" in messages(at)


def damaged_copy(run, tmp_path, step: int, file: str, data: bytes):
    """A copy of a snapshot run whose snapshot of `step` has `file` overwritten with `data`."""
    import shutil

    from model.checkpoints.snapshots import step_folder

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    (copy / "snapshots" / step_folder(step) / file).write_bytes(data)
    return copy


SECRET = b"secret-contents-7f3a"  # bytes that must never reach the page


def test_a_damaged_snapshot_is_named_by_its_step_never_a_traceback(snapshot_run, tmp_path):
    bad = SECRET + b"\x00" * 16  # not a safetensors header
    run = damaged_copy(snapshot_run, tmp_path, 4, "model.safetensors", bad)
    at = open_page("training", f"path:{run}", text="abcd")  # step 0 shown: the curve cannot run step 4
    assert not at.exception, at.exception
    assert "snapshot of step 4 could not be loaded" in messages(at) and "secret" not in messages(at)
    assert chart_titles(at)[0].startswith("Step 0") and "no curve here" not in caption(at)
    assert [t["name"] for t in charts(at)[1]["data"]][-1] == "alignment, layer 1 (held-out)"  # none for this input
    at.select_slider(key="trn_step").set_value(4).run()  # the damaged one itself: a message, no chart
    assert not at.exception and at.error and "snapshot of step 4" in at.error[0].value and not charts(at)

    run = damaged_copy(snapshot_run, tmp_path / "config", 8, "config.json", b"{" + SECRET)
    at = open_page("training", f"path:{run}", text="abcd", trn_step="8")  # the damaged one chosen in the link
    assert not at.exception and "snapshot of step 8 could not be loaded" in at.error[0].value
    assert "secret" not in messages(at)


def test_an_unforeseen_snapshot_failure_is_logged_and_named_generically(snapshot_run, tmp_path, monkeypatch, caplog):
    import shutil

    import model

    run = tmp_path / "run"  # a folder of its own: no snapshot of it is in the page's caches yet
    shutil.copytree(snapshot_run, run)

    real = model.load_checkpoint

    def failing(path, *args, **kwargs):  # an error no check foresaw, from the snapshot of step 0 only
        if path.endswith("step-00000"):
            raise RuntimeError(SECRET.decode())
        return real(path, *args, **kwargs)

    monkeypatch.setattr(model, "load_checkpoint", failing)
    at = open_page("training", f"path:{run}", text="abcd", trn_step="0")
    assert not at.exception, at.exception
    assert at.error and "step 0 could not be run" in at.error[0].value and "secret" not in messages(at)
    assert SECRET.decode() in caplog.text  # the server log keeps the cause
