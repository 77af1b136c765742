"""The positional page's views of RoPE, ALiBi and T5's relative bias, and the length experiment (issue 24), headless."""

import numpy as np

from model import Tokenizer, TransformerConfig, Vocab, build_model, load_checkpoint, save_checkpoint
from model.checkpoints.demos import Demo
from model.network.pe_kinds import relative_bias_curves
from tasks.length_experiment import LengthCurve, card_entry
from tasks.tasks import ALPHABET
from tests.apptest_helpers import chart_titles, charts, messages, open_page


def checkpoint(folder, positional, card=None, **overrides):
    vocab = Vocab.build(list(ALPHABET), level="char")
    config = TransformerConfig.preset(
        "tiny", src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), n_heads=4, d_model=16, max_len=64,
        positional=positional, **overrides,
    )  # fmt: skip
    save_checkpoint(build_model(config, seed=3), Tokenizer(vocab, vocab), folder, card=card)
    return folder


def figure(at, title_start):
    return next(c for c in charts(at) if c["layout"].get("title", {}).get("text", "").startswith(title_start))


def values(field):
    from tests.test_app_interventions import values as decode

    return decode(field)


def test_rope_view_uses_the_loaded_models_head_width_and_checks_the_identity(tmp_path):
    path = checkpoint(tmp_path / "rope", "rope", pe_base=500.0)
    at = open_page("positional", f"path:{path}", text="abc", pe_view="rope", pe_pair="1")
    assert not at.exception, at.exception
    assert any("This model uses RoPE: each head's 4 dimensions, base 500" in c.value for c in at.caption)
    assert float(at.metric[0].value) < 1e-10  # q_m . k_n along each diagonal: rounding only
    freq = figure(at, "Rotation frequencies")
    np.testing.assert_allclose(values(freq["data"][0]["y"]), [1.0, 500.0**-0.5])
    assert chart_titles(at)[0] == f"Pair 1: turns {500.0**-0.5:.3g} rad per position"
    at = open_page("positional", f"path:{path}", text="abc", pe_view="mine")
    assert any("rotary positions (RoPE)" in c.value for c in at.caption)


def test_alibi_view_shows_the_models_slopes_on_one_colour_range(tmp_path):
    path = checkpoint(tmp_path / "alibi", "alibi")
    at = open_page("positional", f"path:{path}", text="abc", pe_view="alibi")
    assert not at.exception, at.exception
    slopes = figure(at, "ALiBi slopes")
    np.testing.assert_allclose(values(slopes["data"][0]["y"]), [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8])
    maps = figure(at, "ALiBi:")
    assert len(maps["data"]) == 4 and all(t["coloraxis"] == "coloraxis" for t in maps["data"])
    np.testing.assert_allclose(values(maps["data"][1]["z"])[0, 5], -(2.0**-4) * 5)
    at = open_page("positional", "demo:reverse", text="abc", pe_view="alibi", pe_heads="6")
    assert len(figure(at, "ALiBi:")["data"]) == 6 and "not a power of 2" in " ".join(c.value for c in at.caption)


def test_relative_view_shows_the_bucket_function_and_the_learned_bias(tmp_path):
    path = checkpoint(tmp_path / "rel", "relative", relative_buckets=16, relative_max_distance=32)
    at = open_page("positional", f"path:{path}", text="abc", pe_view="relative")
    assert not at.exception, at.exception
    buckets = figure(at, "T5's buckets")
    rel, enc = values(buckets["data"][0]["x"]), values(buckets["data"][0]["y"])
    assert enc[list(rel).index(0)] == 0 and enc[list(rel).index(1)] == 9 and enc[-1] == 15  # 8 per direction
    encoder = figure(at, "Encoder: learned bias of this model")
    want = relative_bias_curves(load_checkpoint(path)[0], 40)["source"][1]
    np.testing.assert_allclose(values(encoder["data"][2]["y"]), want[2], atol=1e-6)
    at = open_page("positional", "demo:reverse", text="abc", pe_view="relative")
    assert "Load a model with T5's relative bias" in messages(at) or figure(at, "Encoder: learned bias of the")


def reverse_card(positional, curves=None):
    card = {"task": "reverse", "seed": 0, "recipe": {"train_size": 50}, "config": {"positional": positional},
            "input_tokens": {"min": 1, "max": 3, "unit": "characters"}}  # fmt: skip
    if curves:
        card["length_experiment"] = card_entry(curves, "2026-11-25")
    return card


def test_length_experiment_draws_shipped_curves_and_computes_missing_ones(tmp_path, monkeypatch):
    from ui.views import positional_models

    lengths = np.arange(1, 7)
    shipped = LengthCurve(lengths, np.array([1, 1, 1, 0.5, 0.1, 0]), np.full(6, 50), 0)
    sinus = checkpoint(tmp_path / "s", "sinusoidal", reverse_card("sinusoidal", [shipped]))
    rope = checkpoint(tmp_path / "r", "rope", reverse_card("rope"))
    demos = [
        Demo("reverse", sinus, reverse_card("sinusoidal", [shipped])),
        Demo("reverse_rope", rope, reverse_card("rope")),
    ]
    monkeypatch.setattr(positional_models, "list_demos", lambda: demos)
    at = open_page("positional", f"path:{sinus}", text="abc", pe_view="length")
    assert not at.exception, at.exception
    curves = figure(at, "Exact match by input length")
    assert [t["name"] for t in curves["data"]] == ["Sinusoidal (fixed)"]  # only the shipped one, until asked
    np.testing.assert_allclose(values(curves["data"][0]["y"]), shipped.exact_match)
    assert "right at least half the time up to 4 letters" in " ".join(m.value for m in at.markdown)
    assert any("Here they do not" in m.value for m in at.markdown)  # falls within 3 letters past the range
    assert any("From 6 letters on, every model is right less than one time in ten" in m.value for m in at.markdown)
    at.button(key="pe_length_go").click().run()
    assert not at.exception, at.exception
    names = [t["name"] for t in figure(at, "Exact match by input length")["data"]]
    assert names == ["Sinusoidal (fixed)", "RoPE"]
    at.segmented_control(key="pe_lshift").set_value(5).run()  # no shipped curve for k = 5: only the button
    assert not at.exception and "compute them with the button above" in messages(at)


def test_inside_page_shows_the_bias_an_alibi_model_adds(tmp_path):
    path = checkpoint(tmp_path / "alibi", "alibi")
    at = open_page(
        "inside", f"path:{path}", text="abcd", in_kind="encoder_self", in_query="1", in_layer="0", in_head="0"
    )
    assert not at.exception, at.exception
    bias = figure(at, "Scaled scores plus the positional bias")
    b = values(bias["data"][1]["y"])  # encoder self-attention of "abcd" + </s>, query 1, head 0: slope 2^-2
    np.testing.assert_allclose(b, [-0.25 * abs(1 - j) for j in range(5)], atol=1e-6)
    total = values(bias["data"][2]["y"])
    np.testing.assert_allclose(total, values(bias["data"][0]["y"]) + b, atol=1e-6)
    at = open_page("inside", f"path:{path}", text="abcd", in_kind="cross")
    assert not any(c["layout"].get("title", {}).get("text", "").startswith("Scaled scores plus") for c in charts(at))


def test_the_six_kinds_views_show_the_decoder_only_demos_and_the_nope_lesson():
    """Issue 32: the shipped decoder-only demos beside the six kinds, with the numbers of their cards and results:
    their length curves (as trained) in the length view, their exact match in the models view, and the NoPE lesson
    of the two models without positions (the causal decoder holds longer than the encoder-decoder)."""
    import json

    from i18n import _
    from model.checkpoints.demos import list_demos
    from tasks.length_experiment import card_curve, holds_up_to, measured_curve
    from ui.views.positional_models import DECODER, NOPE_LESSON
    from ui.views.positional_names import KINDS

    demos = {d.name: d for d in list_demos()}
    decoders = {"rope": demos["reverse_decoder_rope"], "none": demos["reverse_decoder_nope"]}
    at = open_page("positional", "demo:reverse", text="abc", pe_view="length")
    assert not at.exception, at.exception
    curves = {t["name"]: t for t in figure(at, "Exact match by input length")["data"]}
    for kind, demo in decoders.items():
        trace = curves[_(DECODER).format(kind=_(KINDS[kind]))]
        np.testing.assert_allclose(values(trace["y"]), demo.card["length_experiment"]["exact_match"])
    dec = holds_up_to(measured_curve(decoders["none"].card))
    encdec = holds_up_to(card_curve(demos["reverse_nope"].card, 0))
    lesson = _(NOPE_LESSON).format(dec=dec, encdec=encdec)
    assert lesson in [m.value for m in at.markdown] and dec > encdec
    at = open_page("positional", "demo:reverse", text="abc", pe_view="models")
    assert not at.exception, at.exception
    shown = {m.label: m.value for m in at.metric}
    for kind, demo in decoders.items():
        results = json.loads((demo.path / "results.json").read_text())["results"]
        want = results["exact_match (200,)"]["exact_match"]
        assert shown[_(DECODER).format(kind=_(KINDS[kind]))] == f"{want:.0%}"
    assert lesson in [m.value for m in at.markdown]
