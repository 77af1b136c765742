"""Issue 21, headless (AppTest): what the lecture hall found untrue or unclear.

- After a decoding step is overridden, the candidate box shows the candidate now taken, and its bar is outlined.
- The gold alignment's hover names the output token, on rows that are the output tokens written (issue 34: the
  decoder input that wrote each in the row's hover), and a capitalised input to a model that lower-cases gets the same
  circles.
- A link naming a model the app does not know says so; a demo's bare name opens that demo, and says so.
- fr_en: a sentence typed with its full stop reads its last word; known words outside the task's patterns get a hint.
"""

from __future__ import annotations

import html
import re

import pytest

from tasks.registry import get_task
from tests.apptest_helpers import charts, messages, open_page, shown
from tests.browser_helpers import letters_checkpoint
from tests.i18n_helpers import matching, msgid, msgid_starting

UNKNOWN_MODEL = msgid_starting("The link names a model this app does not know")
SHAPES = msgid("Source: {source} tokens · decoder input: {target} tokens ({origin}) · model predicts: {predicted}")
NO_PATTERN = msgid_starting("Every word is one this model knows, but the sentence follows none of the patterns")


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return f"path:{letters_checkpoint(tmp_path_factory.mktemp('truths'), card={'examples': ['cafe']})}"


def _chosen_bar(at) -> int:
    """The index of the candidate the top-k chart marks as taken (its own colour)."""
    bars = charts(at)[0]["data"][0]
    colors = bars["marker"]["color"]
    odd = [i for i, c in enumerate(colors) if colors.count(c) == 1]
    assert len(odd) == 1, colors
    return odd[0]


def test_after_an_override_the_box_shows_the_candidate_taken_and_its_bar_is_outlined(ckpt):
    at = open_page("decoding", ckpt, text="cafe")
    assert _chosen_bar(at) == 0 and at.selectbox(key="dec_pick_0_0").value == 0
    labels = [html.unescape(y.split(". ", 1)[1]) for y in charts(at)[0]["data"][0]["y"]]
    at.selectbox(key="dec_pick_0_0").set_value(3).run()
    at.button(key="dec_apply").click().run()
    assert not at.exception
    assert f"writes {labels[3]} (p" in shown(at.markdown[0].value)  # the override took the fourth candidate
    box = next(b for b in at.selectbox if b.key and b.key.startswith("dec_pick_0_") and b.key != "dec_pick_0_0")
    assert box.value == 3 == _chosen_bar(at)  # the box names the candidate taken, not the old greedy one
    assert charts(at)[0]["data"][0]["marker"]["line"]["width"][3] > 0  # outlined: visible however small


def _gold(at) -> dict:
    return next(t for t in charts(at)[0]["data"] if t.get("name", "").startswith("gold alignment"))


def test_gold_hover_names_the_output_token_and_capitals_get_the_same_circles():
    lower = open_page("attention", "demo:fr_en", text="je suis étudiant", att_kind="cross", att_view="one")
    gold = _gold(lower)
    assert "output token %{customdata}" in gold["hovertemplate"] and "query" not in gold["hovertemplate"]
    rows = gold["y"]  # the rows written: "0: <s> → i", "1: i → am", ...
    assert rows[0] == "0: &lt;s&gt; → i"  # the row that writes "i", read from <s>
    assert gold["customdata"][0] == "0: i"  # the hover names the output "i", not the input "<s>"
    assert [c.split(": ", 1)[1] for c in gold["customdata"]] == get_task("fr_en").example_for(
        "je suis étudiant"
    ).target.split()[: len(rows)]
    assert [r.split(" → ", 1)[1] for r in rows] == [c.split(": ", 1)[1] for c in gold["customdata"]]
    upper = open_page("attention", "demo:fr_en", text="Je suis étudiant", att_kind="cross", att_view="one")
    assert _gold(upper)["x"] == gold["x"] and _gold(upper)["y"] == rows  # the same circles


def test_a_link_to_an_unknown_model_says_so_and_a_bare_demo_name_opens_it():
    at = open_page("attention", "no_such_model<b>")
    errors = " ".join(shown(e.value) for e in at.sidebar.error)
    assert re.search(matching(UNKNOWN_MODEL), errors) and "no_such_model?b?" in errors and "<b>" not in errors
    assert at.sidebar.selectbox(key="model_choice").value != "no_such_model<b>"
    at = open_page("attention", "fr_en")
    assert at.sidebar.selectbox(key="model_choice").value == "fr_en" and not at.sidebar.error
    assert any("demo:fr_en" in shown(c.value) for c in at.sidebar.caption)


def test_fr_en_reads_a_full_stop_and_hints_at_sentences_outside_its_patterns():
    at = open_page("attention", "demo:fr_en", text="je suis étudiant.")
    gold = get_task("fr_en").example_for("je suis étudiant").target
    assert any(re.search(matching(SHAPES, predicted=gold) + "$", c.value) for c in at.caption)  # not "i am an cheese"
    assert "patterns" not in messages(at)
    at = open_page("decoding", "demo:fr_en", text="le chat noir mange")
    assert re.search(matching(NO_PATTERN), messages(at))
