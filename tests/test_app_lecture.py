"""Lecture-ready pages (issue 10), headless: every selection read from and written to the URL, explanations in
place on every page, the presentation toggle, and the gold alignment drawn only over the gold target."""

import pytest

from model.checkpoints.demos import CHECKPOINTS
from tests.apptest_helpers import PAGES, charts, open_page
from tests.browser_helpers import letters_checkpoint
from tests.i18n_helpers import rendered


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return f"path:{letters_checkpoint(tmp_path_factory.mktemp('lecture'), card={'examples': ['cafe']})}"


def test_positional_selections_come_from_the_link_and_go_back_to_it(ckpt):
    at = open_page("positional", ckpt, pe_view="offsets", pe_starts="3,7,999")
    assert at.multiselect(key="pe_starts").value == [3, 7]  # 999 is not a starting position here: dropped
    assert at.query_params["pe_starts"] == "3,7"
    at.multiselect(key="pe_starts").set_value([]).run()
    assert at.query_params["pe_starts"] == "none"  # an empty choice stays empty in the link
    at = open_page("positional", ckpt, pe_view="curves", pe_dims="2,5")
    assert at.multiselect(key="pe_dims").value == [2, 5] and at.query_params["pe_dims"] == "2,5"
    at = open_page("positional", ckpt, pe_view="shift", pe_k="9")
    assert at.slider(key="pe_k").value == 9 and "k = 9" in charts(at)[0]["layout"]["title"]["text"]
    at.slider(key="pe_k").set_value(4).run()
    assert at.query_params["pe_k"] == "4"


def test_attention_model_and_decoding_selections_are_in_the_link(ckpt):
    at = open_page("attention", ckpt, text="cafe", att_view="bertviz", att_bertviz="model view")
    assert at.radio(key="att_bertviz").value == "model view" and at.query_params["att_bertviz"] == "model view"
    at = open_page("model", ckpt, model_view="weights", model_part="encoder")
    assert at.selectbox(key="model_part").value == "encoder" and at.query_params["model_part"] == "encoder"
    at = open_page("model", ckpt, text="cafe", model_view="shapes", model_shape_kind="cross")
    assert at.radio(key="model_shape_kind").value == "cross"
    at = open_page("decoding", ckpt, text="cafe", dec_layer="1")
    assert at.selectbox(key="dec_layer").value == 1 and at.query_params["dec_layer"] == "1"


def test_lecture_pack_inputs_come_from_the_link_and_go_back_to_it(ckpt):
    at = open_page("lecture_pack", ckpt, text="cafe", pack_inputs="bead\nhead")
    assert at.text_area(key="pack_inputs").value == "bead\nhead"  # the link's list, not the prefilled one
    at.text_area(key="pack_inputs").set_value("cafe\nfade").run()
    assert at.query_params["pack_inputs"] == "cafe\nfade"
    at = open_page("lecture_pack", ckpt, text="cafe", pack_inputs="x" * 50_000)  # bounded like the box
    from pack.records import MAX_CHARS, MAX_INPUTS

    assert len(at.text_area(key="pack_inputs").value) == MAX_INPUTS * (MAX_CHARS + 1) and not at.exception


from ui.shell.explain import TEXTS  # noqa: E402  (the titles by their catalog keys)

EXPLAINED = {
    "attention": {"How to read an attention map", TEXTS["decoder_rows"][0], "<s>, </s>, <unk>"},
    "positional": {"The formula"},
    "decoding": {"Greedy decoding", "<s>, </s>, <unk>"},
    "model": {"Post-LN and pre-LN", "Heads and d_k"},
}


@pytest.mark.parametrize("page", PAGES)
def test_every_page_explains_in_place(page, ckpt):
    at = open_page(page, ckpt, text="cafe")
    assert EXPLAINED[page] <= {e.label for e in at.expander}
    if page == "positional":
        assert at.get("latex")  # the formula in LaTeX, not monospace code
        at.segmented_control(key="pe_view").set_value("offsets").run()
        assert rendered("Why the dot product depends on the offset only") in {e.label for e in at.expander}


def test_presentation_mode_is_a_toggle_kept_in_the_link(ckpt):
    at = open_page("attention", ckpt, text="cafe", present="1")
    assert at.sidebar.toggle(key="present").value is True and at.query_params["present"] == "1"
    assert charts(at)[0]["layout"]["xaxis"]["tickfont"]["size"] == 18  # larger text for the room
    at.sidebar.toggle(key="present").set_value(False).run()
    assert "present" not in at.query_params and charts(at)[0]["layout"]["xaxis"]["tickfont"]["size"] == 14


@pytest.mark.skipif(not (CHECKPOINTS / "reverse").is_dir(), reason="the reverse demo is not shipped here")
def test_gold_alignment_is_drawn_over_the_gold_target_only():
    at = open_page("attention", "demo:reverse", text="stressed")
    traces = charts(at)[0]["data"]
    gold = [t for t in traces if t.get("type") == "scatter"]
    assert len(gold) == 1 and gold[0]["name"].startswith("gold alignment")
    assert len(gold[0]["x"]) == len("stressed")  # one marker per output letter, from its mirrored source letter
    pairs = {(int(x.split(":")[0]), int(y.split(":")[0])) for x, y in zip(gold[0]["x"], gold[0]["y"], strict=True)}
    assert pairs == {(i, 7 - i) for i in range(8)}  # source letter i wrote output letter 7 - i (row 7 - i)
    forced = open_page("attention", "demo:reverse", text="stressed", target="abcdefgh")  # teacher forcing, not gold
    assert not [t for t in charts(forced)[0]["data"] if t.get("type") == "scatter"]


def test_a_chart_below_messages_that_fill_the_screen_gets_a_screen_of_its_own():
    """Presentation mode fits a page's first chart into what its header leaves of a 1366x768 screen. On the compare
    page two models of other tokens and layers put two reasons above their maps, which leave less than
    MIN_CHART_PX: each map then gets a screen's height of its own (no taller than it), not the sliver that is left
    (54 px before)."""
    from ui.shell.presentation import MIN_CHART_PX, SCREEN_PX

    at = open_page("compare", "demo:translate", model_b="demo:dates", present="1")
    assert not at.exception, at.exception
    assert len(at.info) == 2  # the two reasons the maps cannot be subtracted
    heights = [c["layout"]["height"] for c in charts(at)]
    assert len(heights) == 2 and all(MIN_CHART_PX <= h <= SCREEN_PX - 24 for h in heights), heights
