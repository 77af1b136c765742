"""Every page through AppTest: default input, bad inputs, links that reproduce a view."""

import html
import re

import pytest

from model.checkpoints.demos import list_demos
from tests.apptest_helpers import PAGES, TITLES, chart_titles, charts, messages, open_page, shown
from tests.browser_helpers import letters_checkpoint
from tests.i18n_helpers import matching, rendered
from viz.tokens import display_tokens

EXAMPLES = ["hello", "abcab", "ceded"]


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """A small random char-level model (letters a-h), max_len 12, with examples in its card."""
    return f"path:{letters_checkpoint(tmp_path_factory.mktemp('ckpt'))}"


@pytest.mark.parametrize("page", PAGES)
def test_each_page_renders_its_figures_for_the_default_input(page, ckpt):
    at = open_page(page, ckpt)
    assert not at.exception, at.exception
    assert at.title[0].value == TITLES[page]
    assert at.sidebar.text_area(key="text").value == "abcdefgh"  # the first example of the card
    assert not at.error
    downloads = [b.proto.label for b in at.get("download_button")]
    assert (
        rendered("Download attention and PE (.npz)") in downloads
        and rendered("Download attention and PE (.json)") in downloads
    )
    # only the default view is built: one heatmap; the PE matrix; decoding's four; the model's configuration table
    assert len(charts(at)) == {"attention": 1, "positional": 1, "decoding": 4, "model": 0}[page]


def test_attention_axes_are_the_tokens(ckpt):
    at = open_page("attention", ckpt, text="cafe", target="bead")
    one = charts(at)[0]
    assert one["layout"]["xaxis"]["ticktext"] == display_tokens(list("cafe") + ["</s>"])
    # rows: the tokens written (issue 34), the target's, then the model's own next token; the hover names the input
    assert one["layout"]["yaxis"]["ticktext"][:4] == ["b", "e", "a", "d"] and len(one["data"][0]["y"]) == 5
    assert one["data"][0]["y"][:2] == ["0: &lt;s&gt; → b", "1: b → e"]
    assert one["layout"]["title"]["text"] == "Cross-attention (decoder → encoder), layer 2, average of heads"
    at.segmented_control(key="att_view").set_value("grid").run()
    (grid,) = charts(at)
    assert len(grid["data"]) == 2 and grid["layout"]["title"]["text"] == "Cross-attention (decoder → encoder), layer 2"
    at.segmented_control(key="att_view").set_value("overview").run()
    (overview,) = charts(at)
    assert (
        len(overview["data"]) == 1 and len(overview["layout"]["annotations"]) == 2 + 3
    )  # one trace: 2 heads, 3 layers


def test_a_link_reproduces_the_attention_view(ckpt):
    at = open_page("attention", ckpt, text="head", att_kind="decoder_self", att_layer="1", att_head="0")
    assert chart_titles(at)[0] == "Decoder self-attention (causal), layer 1, head 0"
    assert at.query_params["att_kind"] == "decoder_self" and at.query_params["text"] == "head"
    at.radio(key="att_kind").set_value("encoder_self").run()
    assert chart_titles(at)[0].startswith("Encoder self-attention, layer 1")
    assert at.query_params["att_kind"] == "encoder_self"


def test_nonsense_in_the_url_falls_back_to_defaults(ckpt):
    at = open_page("attention", ckpt, att_kind="bogus", att_layer="99", att_head="-3")
    assert not at.exception
    assert chart_titles(at)[0] == "Cross-attention (decoder → encoder), layer 2, average of heads"


BAD_INPUTS = {
    "empty": ("", "is empty"),
    "whitespace": ("  \n\t ", "is empty"),
    "only unknown": ("XYZ 123", "None of the input's symbols"),
    "too long": ("abcdefgh" * 4, "reads at most 11"),
    "control characters": ("ca\x00fe\u200b\x1b", "Removed 3 control"),
}


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_named_and_kept(page, case, ckpt):
    text, expected = BAD_INPUTS[case]
    at = open_page(page, ckpt)
    at.sidebar.text_area(key="text").set_value(text).run()
    assert not at.exception, at.exception
    assert at.sidebar.text_area(key="text").value == text  # nothing the user typed is lost
    refused = case in ("empty", "whitespace", "only unknown")  # the others are read, with a warning
    if page == "model":  # the configuration still shows, and the problem is named
        assert expected in messages(at) and at.dataframe
        at.segmented_control(key="model_view").set_value("shapes").run()  # the view that needs the input
        assert expected in messages(at) and any("S = " in m.value for m in at.markdown) != refused
        return
    if page == "positional":
        # the PE page works without input (the problem is named); only the model-and-input view depends on it
        assert expected in messages(at) and len(charts(at)) == 1
        at.segmented_control(key="pe_view").set_value("mine").run()
        assert expected in messages(at) and bool(charts(at)) != refused
        return
    assert expected in messages(at)
    if case in ("empty", "whitespace", "only unknown"):
        assert not charts(at)
    else:
        assert charts(at)


def test_bad_target_is_named(ckpt):
    at = open_page("attention", ckpt, text="cafe")
    at.sidebar.text_input(key="target").set_value("ZZZ").run()
    assert "None of the target's symbols" in messages(at) and not charts(at)
    assert at.sidebar.text_input(key="target").value == "ZZZ"


def test_examples_fill_the_input_box(ckpt):
    at = open_page("attention", ckpt)
    at.sidebar.selectbox(key="example_pick").set_value("cafe").run()
    assert at.sidebar.text_area(key="text").value == "cafe"
    assert charts(at)[0]["layout"]["xaxis"]["ticktext"][:4] == list("cafe")


def test_decoding_steps_forward_and_back(ckpt):
    at = open_page("decoding", ckpt, text="cafe")
    first = at.markdown[0].value
    assert first.startswith("**Step 1 of")
    at.button(key="dec_next").click().run()
    assert at.markdown[0].value.startswith("**Step 2 of")
    assert at.query_params["dec_step"] == "1"
    at.button(key="dec_prev").click().run()
    assert at.markdown[0].value == first


def test_decoding_continues_from_a_chosen_candidate(ckpt):
    at = open_page("decoding", ckpt, text="cafe")
    top = charts(at)[0]["data"][0]["y"]  # "1. x", "2. y", ...
    second = html.unescape(top[1].split(". ", 1)[1])
    at.selectbox(key="dec_pick_0_0").set_value(1).run()
    at.button(key="dec_apply").click().run()
    assert not at.exception
    assert f"writes {second} (p = " in shown(at.markdown[0].value) and "your choice" in at.markdown[0].value
    assert at.query_params["dec_prefix"]  # the choice is in the link
    at.button(key="dec_reset").click().run()
    assert "your choice" not in at.markdown[0].value


def _candidates_shown(at) -> tuple[list[str], list[str]]:
    """(the candidate box's labels, the same candidates as the top-k chart labels them)."""
    box = next(b for b in at.selectbox if b.key and b.key.startswith("dec_pick_"))
    bars = charts(at)[0]["data"][0]
    from_chart = [f"{html.unescape(y.split('. ', 1)[1])}  ({text})" for y, text in zip(bars["y"], bars["text"])]
    return list(box.options), from_chart


def test_the_candidate_box_shows_the_current_step(ckpt):
    at = open_page("decoding", ckpt, text="cafe")
    at.selectbox(key="dec_pick_0_0").set_value(2).run()
    at.button(key="dec_next").click().run()
    box, chart = _candidates_shown(at)
    assert box == chart  # step 2's candidates with step 2's probabilities, as the chart shows them
    assert at.selectbox(key="dec_pick_1_0").value == 0  # the pick made at step 1 does not carry over
    at.selectbox(key="dec_pick_1_0").set_value(1).run()
    at.button(key="dec_apply").click().run()  # a forced choice: the step's candidates are recomputed
    box, chart = _candidates_shown(at)
    assert box == chart


def test_model_page_walks_through_attention_shapes(ckpt):
    at = open_page("model", ckpt, text="cafe", target="be", model_view="shapes")
    table = at.dataframe[-1].value
    shapes = dict(zip(table["formula"], table["shape"]))
    assert shapes["Q_h K_h^T / sqrt(d_k)"] == "1 × 2 × 5 × 5"  # encoder self by default: S = 5
    at.radio(key="model_shape_kind").set_value("cross").run()
    table = at.dataframe[-1].value
    assert dict(zip(table["formula"], table["shape"]))["Q_h K_h^T / sqrt(d_k)"] == "1 × 2 × 3 × 5"


def test_positional_controls_and_link(ckpt):
    at = open_page("positional", ckpt, pe_d="32", pe_len="40", pe_base="100")
    assert chart_titles(at)[0] == "PE matrix: 40 positions × 32 dimensions, base 100"
    at.slider(key="pe_len").set_value(60).run()
    assert chart_titles(at)[0] == "PE matrix: 60 positions × 32 dimensions, base 100"
    assert at.query_params["pe_len"] == "60"


def test_a_broken_checkpoint_path_is_explained(tmp_path):
    (tmp_path / "config.json").write_text("{broken")
    at = open_page("attention", f"path:{tmp_path}")
    assert not at.exception
    assert "config.json is not valid JSON" in " ".join(shown(e.value) for e in at.sidebar.error)


@pytest.mark.skipif(not list_demos(), reason="no shipped demo models yet")
def test_the_app_starts_with_a_shipped_demo_model():
    at = open_page("attention")
    assert not at.exception and not at.error
    assert at.sidebar.selectbox(key="model_choice").value == list_demos()[0].name
    assert len(charts(at)) == 1  # the default view: one heatmap


def _demo(name):
    demo = next((d for d in list_demos() if d.name == name), None)
    if demo is None:
        pytest.skip(f"checkpoints/{name} is not there")
    return demo


def test_changing_the_model_starts_from_that_models_first_example():
    translate, reverse = _demo("translate"), _demo("reverse")
    at = open_page("attention", f"demo:{translate.name}", text="the red car sees a small dog")
    assert at.sidebar.text_area(key="text").value == "the red car sees a small dog"
    at.sidebar.selectbox(key="model_choice").set_value(reverse.name).run()
    assert not at.exception, at.exception
    assert at.sidebar.text_area(key="text").value == reverse.examples[0]  # not the sentence, read as <unk>
    assert at.query_params["text"] == reverse.examples[0] and at.query_params["model"] == f"demo:{reverse.name}"
    assert "<unk>" not in messages(at)
    at.sidebar.text_area(key="text").set_value("abc").run()  # typing afterwards is kept as usual
    assert at.sidebar.text_area(key="text").value == "abc"


def test_an_input_outside_the_trained_range_is_warned_about_before_the_result():
    from model.text.trained_range import TRAINED_RANGE, TRAINED_RANGE_MORE

    reverse = _demo("reverse")
    high = reverse.card["input_tokens"]["max"]
    unit = dict(low=1, high=high, unit=rendered("characters"))
    at = open_page("attention", f"demo:{reverse.name}", text="ab" * high)
    assert not at.exception, at.exception
    warnings = [w.value for w in at.warning]
    assert rendered(TRAINED_RANGE, n=2 * high, **unit) in warnings, warnings
    assert charts(at)  # the result is still shown, after the warning
    # a text longer than the page reads (counting stopped): "more than" the count of what it read, not its length
    at.sidebar.text_area(key="text").set_value("ab" * 3000).run()

    def counted(template: str) -> list[int]:  # n of each warning that is this message
        pattern = matching(template, n="NUMBER", **unit).replace("NUMBER", r"(\d+)")
        return [int(m.group(1)) for w in at.warning if (m := re.fullmatch(pattern, w.value, re.S))]

    more = counted(TRAINED_RANGE_MORE)
    assert len(more) == 1 and high < more[0] < 6000 and counted(TRAINED_RANGE) == [], [w.value for w in at.warning]
    at.sidebar.text_area(key="text").set_value("abc").run()
    assert counted(TRAINED_RANGE) == counted(TRAINED_RANGE_MORE) == []
