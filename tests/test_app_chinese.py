"""Every page in Chinese (issue 16), through AppTest: with lang=zh no visible string is left in English only.

The visible strings (tests/i18n_helpers.py) of each page and each of its views are listed; every one must hold
Chinese or be on the allow-list (tokens, formulas, numbers, model names, file names). The language comes from
the URL (lang=zh), else from the browser (st.context.locale), and the sidebar's switch changes it.
"""

from __future__ import annotations

import pytest

from i18n import Message, _, language_scope
from model.checkpoints.checkpoint import load_config, load_tokenizer
from model.checkpoints.demos import list_demos
from model.text.inputs import check_text
from tasks.cards import card_description
from tests.apptest_helpers import TITLES, open_page
from tests.i18n_helpers import has_cjk, msgid, untranslated, visible_strings
from ui.shell.model_picker import UPLOAD_CHOICE
from ui.shell.navigation import PAGES
from ui.views.decoding_strategy import MENU

# Each page, and the key and values of its view selector (None: one view).
VIEWS = {
    "attention": ("att_view", ["one", "grid", "overview", "bertviz"]),
    "inside": (None, []),
    "attribution": (None, []),
    "positional": (
        "pe_view",
        [
            "matrix",
            "curves",
            "offsets",
            "similarity",
            "shift",
            "mine",
            "infer",
            "rope",
            "alibi",
            "relative",
            "models",
            "length",
        ],
    ),
    "decoding": ("dec_strategy", list(MENU)),  # every strategy of the menu, from the registry
    "compare": ("cmp_kind", ["cross", "encoder_self", "decoder_self"]),
    "training": (None, []),
    "model": ("model_view", ["config", "params", "weights", "shapes"]),
    "lecture_pack": (None, []),
    "head_atlas": (None, []),
}
# URL parameters a page needs to show its content: the translate demo ships training snapshots.
LINKS = {"training": {"model": "demo:translate"}}
# The same in every language: the demo models' names and example inputs (tokens), the languages' own names, and the
# few formulas charts and tables use as a title, a legend entry or a column header (log p: the beam table; cos: the
# colour bar of a cosine similarity).
ALLOWED = {d.name for d in list_demos()} | {e for d in list_demos() for e in d.examples}
ALLOWED |= {"English", "PE(p) · PE(p+k)", "softmax(q·k_j / √d_k)", "log p", "cos", "<unk>", "<pad>"}  # tokens


@pytest.fixture(autouse=True)
def chinese():
    """AppTest calls the widgets' format functions in the test's own thread: give it the app's language."""
    with language_scope("zh"):
        yield


def check(at, where: str) -> list[tuple[str, str]]:
    assert not at.exception, f"{where}: {[e.value for e in at.exception]}"
    strings = visible_strings(at)
    left = untranslated(strings, ALLOWED)
    assert left == [], f"{where}: English left in Chinese: {left}"
    return strings


def selector(at, key: str):
    """A page's view selector: a segmented control (a button group) or a radio."""
    for widgets in (at.button_group, at.radio):
        try:
            return widgets(key=key)
        except KeyError:
            continue
    raise KeyError(key)


def test_every_page_in_the_list():
    assert set(VIEWS) == set(PAGES)  # a page added to PAGES is checked here too (add its views above)


@pytest.mark.parametrize("page", list(VIEWS))
def test_every_page_and_view_speaks_chinese(page):
    at = open_page(page, lang="zh", **LINKS.get(page, {}))
    strings = check(at, page)
    navigation = [text for where, text in strings if where == "navigation"]
    assert len(navigation) >= len(PAGES) and all(has_cjk(t) for t in navigation)
    if page in TITLES:
        assert at.title[0].value == _(TITLES[page]) and has_cjk(at.title[0].value)
    assert any(where.endswith("label") for where, _text in strings)  # the walk saw the widgets
    key, views = VIEWS[page]
    for view in views[1:]:
        selector(at, key).set_value(view).run()
        check(at, f"{page}, view {view}")
    assert at.query_params["lang"] == "zh"  # kept in the link through every rerun


def test_messages_about_the_input_and_the_model_are_in_chinese(monkeypatch):
    at = open_page("attention", lang="zh", text="ABC 123")  # the reverse demo reads a-t only
    strings = check(at, "unreadable input")
    assert at.error and all(has_cjk(e.value) for e in at.error)
    at.selectbox(key="model_choice").set_value(UPLOAD_CHOICE).run()
    check(at, "upload")
    assert any(has_cjk(i.value) for i in at.sidebar.info)
    monkeypatch.delenv("TRANSFORMER_VIZ_FOLDERS", raising=False)  # server folders off: a path link is refused
    refused = open_page("attention", model="path:/srv/models/x", lang="zh")
    check(refused, "refused link")
    assert refused.sidebar.error and has_cjk(refused.sidebar.error[0].value)
    assert strings


def test_the_compare_page_says_in_chinese_why_it_cannot_subtract():
    at = open_page("compare", "demo:translate", lang="zh", model_b="demo:dates")  # other tokens, other outputs
    check(at, "compare, two tokenizers")
    assert len(at.info) == 2 and all(has_cjk(i.value) for i in at.info)  # source tokens and decoder inputs differ
    assert len(at.get("plotly_chart")) == 2  # side by side, no difference

    at = open_page("compare", "demo:reverse", lang="zh", text="stressed", model_b="demo:translate")
    check(at, "compare, B cannot read the input")
    translate = next(d.path for d in list_demos() if d.name == "translate")
    why = check_text("stressed", load_tokenizer(translate).source, load_config(translate).max_len - 1).errors
    assert why and all(_(w) != str(w) for w in why)  # the reasons have their Chinese
    assert [e.value for e in at.error] == [_("Model B cannot read this input: {why}").format(why=_(w)) for w in why]


def test_every_demo_card_is_described_in_chinese_and_compare_says_it():
    """A shipped demo's card carries one of its task's sentences (the decoder-only demos' one-sequence sentence
    included): shown as that message, in the reader's language, wherever the card is described (the sidebar, Model,
    Compare's model A)."""
    for demo in list_demos():
        described = card_description(demo.card)
        assert isinstance(described, Message) and msgid(described.template), demo.name
        with language_scope("zh"):
            assert has_cjk(_(described)) and _(described) != str(described), demo.name
    card = next(d.card for d in list_demos() if d.name == "reverse_decoder_rope")
    at = open_page("compare", "demo:reverse_decoder_rope", lang="zh", text="stressed=")
    check(at, "compare, a decoder-only demo")
    with language_scope("zh"):
        assert _(card_description(card)) in [c.value for c in at.caption]
    assert card["description"] not in [c.value for c in at.caption]  # the card's own (English) text


@pytest.mark.parametrize("page", ["attention", "decoding"])
def test_heads_switched_off_and_their_importance_in_chinese(page):
    prefix = page[:3]  # att, dec: the pages' URL keys att_off, dec_off
    at = open_page(page, "demo:reverse", lang="zh", text="stressed", **{f"{prefix}_off": "c1.0,e0.3"})
    check(at, f"{page}, heads switched off")
    assert any(has_cjk(m.value) and "`" in m.value for m in at.markdown)  # the one-line summary of the change
    at.session_state[f"{prefix}_off_open"] = True  # open the "Switch heads off" expander
    if page == "attention":
        at.session_state["att_importance_open"] = True  # and "Which heads matter" (the attention page's)
    at.run()
    check(at, f"{page}, switches open")
    assert at.button_group(key=f"{prefix}_off_c1").value == [0]  # the link's head, ticked
    if page == "attention":
        at.button(key="att_importance_go").click().run()
        strings = check(at, "attention, importance measured")
        title = _("Drop in the output's log-probability when one head is switched off")
        assert has_cjk(title) and ("chart title", title) in strings
    at = open_page(page, "demo:reverse", lang="zh", text="stressed", **{f"{prefix}_off": "x9.9"})
    check(at, f"{page}, a heads link it cannot read")
    assert at.warning and has_cjk(at.warning[0].value)


@pytest.mark.parametrize("change", [{"pe_pos": "shifted", "pe_shift": "3"}, {"pe_pos": "shuffled", "pe_seed": "2"}])
def test_positions_changed_at_inference_in_chinese(change):
    at = open_page("positional", "demo:reverse", lang="zh", text="stressed", pe_view="infer", **change)
    check(at, f"positions at inference, {change}")
    verdict = _(
        "Verdict: on {n} fresh examples the model is exactly right {before:.1%} of the time as trained, "
        "{after:.1%} {what}."
    )
    assert has_cjk(verdict) and any(m.value.startswith(verdict.split("{")[0]) for m in at.markdown)  # in Chinese


def test_the_lecture_pack_page_builds_in_chinese():
    at = open_page("lecture_pack", lang="zh")
    at.button(key="pack_build").click().run()
    strings = check(at, "lecture pack built")
    assert at.success and has_cjk(at.success[0].value)
    assert any(where == "download_button label" and has_cjk(text) for where, text in strings)


def test_the_language_comes_from_the_link_else_the_browser_and_the_switch_changes_it():
    from streamlit.testing.v1 import AppTest

    from tests.apptest_helpers import app_script

    english = open_page("model")
    assert english.title[0].value == "Model" and "lang" not in english.query_params  # no browser language known

    at = AppTest.from_string(app_script("model"), default_timeout=english.default_timeout)
    at.context = {"locale": "zh-CN"}  # navigator.language of a Chinese browser
    at.run()
    with language_scope("zh"):
        assert at.title[0].value == _("Model") != "Model"
    assert at.query_params["lang"] == "zh"  # the link now says it
    at.radio(key="lang").set_value("en").run()
    assert at.title[0].value == "Model" and at.query_params["lang"] == "en"  # en kept: the browser says zh

    for link in ("en", "xx"):  # a link's language wins over the browser's; an unknown one reads as English
        at = AppTest.from_string(app_script("model"), default_timeout=english.default_timeout)
        at.context = {"locale": "zh-CN"}
        at.query_params["lang"] = link
        at.run()
        assert at.title[0].value == "Model", link
