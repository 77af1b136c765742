"""Each page in the words and views of the model's own shape, through AppTest on the shipped decoder-only demo: no
view of a stack it does not have, no encoder-decoder word on a one-sequence model, its own verdicts and ranges."""

from __future__ import annotations

import pytest

from i18n import _
from model import capture, greedy_decode, load_checkpoint
from model.analysis.inspect import attention_shape_walk
from tests.apptest_helpers import ROOT, charts, open_page, shown
from tests.i18n_helpers import rendered
from ui.shell.shapes import WORDS
from ui.views.compare_models import SAME_AS_A, WHY
from ui.views.decoding_steps import CONTEXT_FULL, context_full
from ui.views.positional_interventions import PANEL_TITLES

pytestmark = pytest.mark.filterwarnings("ignore")
DEMO = "demo:reverse_decoder_rope"
PROMPT = "abcd="


def no_error(at) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def z_shape(chart: dict) -> tuple[int, ...]:
    """The first trace's z shape: plotly writes numpy arrays as {dtype, bdata, shape}, lists as lists."""
    z = chart["data"][0]["z"]
    if isinstance(z, dict):
        return tuple(int(n) for n in str(z["shape"]).split(","))
    return (len(z), len(z[0]))


@pytest.fixture(scope="module")
def demo():
    return load_checkpoint(ROOT / "checkpoints" / "reverse_decoder_rope")


def test_positions_at_inference_on_a_decoder_only_demo_shows_its_self_attention_and_a_verdict(demo):
    at = open_page("positional", DEMO, text=PROMPT, pe_view="infer", pe_pos="off")
    no_error(at)
    model, tok = demo
    plain = greedy_decode(model, tok, PROMPT)
    drawn = charts(at)
    assert [c["layout"]["title"]["text"] for c in drawn] == [
        _(t).format(attention=_(WORDS["decoder-only"].attention)) for t in PANEL_TITLES
    ]
    # rows: the written tokens; columns: the prompt and the tokens written before the last one
    assert z_shape(drawn[0]) == (len(plain.steps), len(plain.source_tokens) + len(plain.steps) - 1)
    assert drawn[0]["layout"]["xaxis"]["title"]["text"].startswith(_(WORDS["decoder-only"].sequence))
    assert not at.info  # no "nothing written" panel
    # the verdict on fresh prompts is read from the demo's results.json (no "not a shipped demo" line)
    captions = [c.value for c in at.caption]
    assert _("Not a shipped demo with a task: only this input's output is compared.") not in captions
    assert any(_("Verdict") in m.value for m in at.markdown), [m.value for m in at.markdown]


def test_attribution_names_the_prompt_and_the_continuation(demo):
    at = open_page("attribution", DEMO, text=PROMPT)
    no_error(at)
    words = WORDS["decoder-only"]
    assert _(words.matrix) in [s.value for s in at.subheader]
    matrix = next(c for c in charts(at) if c["layout"]["xaxis"].get("title", {}).get("text") == _(words.reads))
    assert matrix["layout"]["yaxis"]["title"]["text"] == _(words.writes)


def test_the_positional_sizes_of_a_decoder_only_model_name_its_one_sequence():
    at = open_page("positional", DEMO, text=PROMPT, pe_view="mine")
    no_error(at)
    titles = [c["layout"]["title"]["text"] for c in charts(at)]
    assert _("Prompt and continuation: embedding size against positional signal") in titles
    assert _("Target: embedding size against positional signal") not in titles


def test_beam_search_on_a_decoder_only_model_offers_no_cross_attention_to_follow():
    at = open_page("decoding", DEMO, text=PROMPT, dec_strategy="beam")
    no_error(at)
    assert charts(at)  # the tree
    keys = {w.key for w in at.selectbox}
    assert not {"dec_bhyp", "dec_blayer"} & keys, keys  # the hypothesis and layer menus of a view it cannot draw
    assert _("Cross-attention of a hypothesis, step by step") not in [s.value for s in at.subheader]


def test_decoding_that_fills_the_context_says_so(demo):
    model, tok = demo
    prompt = "abcdefghijklmnopqrst" + "abcd" + "="  # 25 of the 34 positions it reads: no room for 24 letters
    trace = greedy_decode(model, tok, prompt)
    assert trace.stop_reason != "eos" and len(trace.source_ids) + len(trace.steps) == model.config.max_len
    at = open_page("decoding", DEMO, text=prompt)
    no_error(at)
    assert _(CONTEXT_FULL).format(n=model.config.max_len) in [i.value for i in at.info]
    assert not context_full(greedy_decode(model, tok, PROMPT), model.config)  # written to </s>: no notice


def test_model_page_offers_only_the_stacks_a_decoder_only_model_has(demo):
    model, tok = demo
    at = open_page("model", DEMO, text=PROMPT, model_view="shapes", model_shape_kind="cross")  # a link from another
    no_error(at)
    assert "model_shape_kind" not in {r.key for r in at.radio}  # one kind: nothing to choose
    trace = greedy_decode(model, tok, PROMPT)  # the prompt and the continuation (</s> left out), one sequence
    n = len(trace.source_tokens) + len([t for t in trace.output_ids if t != tok.target.eos_id])
    walk = attention_shape_walk(model.config.d_model, model.config.n_heads, n, n, d_head=model.config.d_head)
    table = at.dataframe[0].value
    assert [str(s) for s in table.iloc[:, 2]] == [" × ".join(map(str, s.shape)) for s in walk]
    weights = open_page("model", DEMO, text=PROMPT, model_view="weights")
    assert weights.selectbox(key="model_part").options == [
        rendered("all"),
        rendered("decoder"),
        rendered("embeddings and generator"),
    ]


def test_compare_starts_b_from_a_model_that_reads_the_same_tokens():
    at = open_page("compare", "demo:fr_en", text="je suis étudiant")  # no other demo reads fr_en's words
    no_error(at)
    assert at.selectbox(key="model_b_choice").value == "fr_en"
    assert _(SAME_AS_A) in [c.value for c in at.caption]
    assert not at.info and len(charts(at)) == 1  # A, B and A − B in one figure, no reason it cannot subtract


def test_compare_lets_one_decoder_only_model_read_the_others_continuation(demo):
    model, tok = demo
    written = greedy_decode(model, tok, "stressed=").text  # A's continuation; B (NoPE) writes another
    at = open_page("compare", DEMO, text="stressed=")  # B starts from the demo of A's tokens, and reads A's output
    no_error(at)
    assert at.selectbox(key="model_b_choice").value == "reverse_decoder_nope"
    assert at.radio(key="cmp_input").value == "a" and not at.info
    (figure,) = charts(at)  # A, B and A − B in one figure: the rows line up
    assert written == "desserts" and len(figure["data"]) == 3
    at = open_page("compare", DEMO, text="stressed=", cmp_input="own")  # each its own: the rows differ, said so
    no_error(at)
    (said,) = [shown(i.value) for i in at.info]
    assert said.startswith(_(WHY["target_tokens"]).split("{a}")[0]) and "“stressed=desserts" in said


def test_a_decoder_only_model_against_an_encoder_decoder_counts_the_tokens_it_read(demo):
    from model.analysis.compare import mismatches

    model, tok = demo
    one = capture(model, tok, "abcd=")
    pair = capture(*load_checkpoint(ROOT / "checkpoints" / "reverse"), "abcd")
    found = {m.what: m for m in mismatches(one, pair, "decoder_self")}
    assert len(found["source_tokens"].a) == len(one.target_tokens) > 0  # not "A: 0 tokens"
    assert found["target_tokens"].a[0] == one.target_tokens[0] == "a"  # its first token is not a start token
    assert found["target_tokens"].b == pair.target_tokens[1:]  # the encoder-decoder's, after <s>


def test_a_prompt_without_the_demos_separator_is_named_in_the_app_and_the_pack():
    from model.checkpoints.checkpoint import load_card
    from pack.live import live_words
    from tasks.cards import ENDS_WITH, format_warning, pack_checks

    card = load_card(ROOT / "checkpoints" / "reverse_decoder_rope")
    warning = format_warning(card, "stressed")
    assert warning.template == ENDS_WITH and warning.values["end"] == "="
    assert format_warning(card, "stressed=") is None and format_warning(card, "") is None
    at = open_page("attention", DEMO, text="stressed")
    no_error(at)
    assert _(warning) in [shown(w.value) for w in at.warning]
    # the pack's page says the same message when its typed input lacks the "=" (pack/static/pack_live.js fills nothing in)
    words = live_words({"checks": pack_checks(card), "tokenizer": {"source": {"level": "char", "tokens": []}}})
    assert words["ends_with"] == _(warning)


def test_the_length_experiment_shades_each_models_own_trained_lengths():
    from model.checkpoints.checkpoint import load_card
    from tasks.length_experiment import training_range

    at = open_page("positional", "demo:reverse", pe_view="length")
    no_error(at)
    (chart,) = [c for c in charts(at) if any(t.get("mode") == "lines+markers" for t in c["data"])]
    spans = {(s["x0"], s["x1"]) for s in chart["layout"]["shapes"]}
    for name in ("reverse", "reverse_decoder_rope"):  # 1-24 letters, 1-12 letters
        low, high = training_range(load_card(ROOT / "checkpoints" / name))
        assert (low - 0.5, high + 0.5) in spans, (name, spans)


def test_a_decoder_only_map_labels_every_row_on_a_projector():
    at = open_page("attention", DEMO, text="stressed=", present="1")
    no_error(at)
    chart = charts(at)[0]
    rows = z_shape(chart)[0]
    assert rows == len("stressed=desserts")  # every token of prompt and continuation writes one row (the last: </s>)
    assert list(chart["layout"]["yaxis"]["tickvals"]) == list(range(rows))
