"""The declarative URL state (ui/shell/url_state.py) through the pages: a bad link value gets the same translated warning
on every page, a link's values come back as they went in, and keys declared to belong to a model (or an input) are
dropped when it changes."""

from __future__ import annotations

import re

import pytest

from i18n import translations
from tests.apptest_helpers import open_page
from tests.browser_helpers import letters_checkpoint
from tests.i18n_helpers import matching, msgid
from ui.shell.url_state import Key, invalid_warning

INVALID = msgid("The link's value for {what} is not valid here; the default is used instead.")

TEMPLATE = "The link's value for {what} is not valid here; the default is used instead."


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return letters_checkpoint(tmp_path_factory.mktemp("declared"), card={"examples": ["cafe"]})


def warnings(at) -> list[str]:
    return [w.value for w in at.warning]


@pytest.mark.parametrize(
    ("page", "params", "key", "default"),
    [
        ("attention", {"att_layer": "99"}, "att_layer", 2),  # a layer this model does not have: the last one
        ("inside", {"in_kind": "<b>sideways</b>"}, "in_kind", "cross"),
        ("model", {"model_view": "nope"}, "model_view", "config"),
        ("decoding", {"dec_strategy": "beam", "dec_beam": "99"}, "dec_beam", 4),  # the one reader that warned before
        ("positional", {"pe_base": "nan"}, "pe_base", 10000.0),
    ],
)
def test_a_bad_link_value_gets_the_same_warning_on_every_page(ckpt, page, params, key, default):
    at = open_page(page, f"path:{ckpt}", text="cafe", **params)
    assert not at.exception, at.exception
    expected = TEMPLATE.format(what=f"“{key}”") if key != "dec_beam" else TEMPLATE.format(what="the beam size")
    assert expected in warnings(at)
    assert at.session_state[key] == default  # the default is used, as the message says
    assert params[key] not in " ".join(warnings(at))  # the link's value is never echoed


def test_the_warning_is_in_the_readers_language(ckpt):
    at = open_page("attention", f"path:{ckpt}", text="cafe", att_kind="nope", lang="zh")
    zh = translations("zh").gettext(TEMPLATE).format(what="“att_kind”")
    assert zh != TEMPLATE.format(what="“att_kind”")  # the catalog has it
    assert zh in warnings(at)


def test_good_link_values_come_back_unchanged_and_without_a_warning(ckpt):
    link = {"att_view": "grid", "att_kind": "encoder_self", "att_layer": "0", "att_head": "1"}
    at = open_page("attention", f"path:{ckpt}", text="cafe", **link)
    assert not at.exception and not any(re.search(matching(INVALID), w) for w in warnings(at))
    assert {k: at.query_params[k] for k in link} == link
    assert (at.session_state["att_layer"], at.session_state["att_head"]) == (0, 1)  # typed by the declaration
    link = {"pe_view": "curves", "pe_dims": "2,5", "pe_base": "500"}
    at = open_page("positional", f"path:{ckpt}", text="cafe", **link)
    assert {k: at.query_params[k] for k in link} == link and at.multiselect(key="pe_dims").value == [2, 5]


def test_keys_of_a_model_are_dropped_when_the_model_changes(ckpt):
    at = open_page("attention", f"path:{ckpt}", text="cafe", att_off="c0.1", att_layer="1")
    assert at.query_params["att_off"] == "c0.1" and at.session_state["att_off"] == {("cross", 0, 1)}
    at.sidebar.selectbox(key="model_choice").set_value("reverse").run()
    assert not at.exception, at.exception
    assert "att_off" not in at.query_params and at.session_state["att_off"] == set()  # declared resets="model"
    assert at.query_params["att_layer"] == "1"  # a view choice is kept while the new model has that layer


def test_keys_of_an_input_are_dropped_when_the_input_changes(ckpt):
    at = open_page("decoding", f"path:{ckpt}", text="cafe", dec_prefix="3", dec_step="1")
    assert at.query_params["dec_prefix"] == "3" and at.session_state["dec_step"] == 1
    at.sidebar.text_area(key="text").set_value("bead").run()
    assert not at.exception, at.exception
    assert "dec_prefix" not in at.query_params and at.session_state["dec_prefix"] == ()
    assert at.session_state["dec_step"] == 0


def test_invalid_warning_names_a_declared_description_or_the_key():
    assert invalid_warning(Key("x_k")) == TEMPLATE.format(what="“x_k”")
    assert invalid_warning(Key("x_k", what="the seed")) == TEMPLATE.format(what="the seed")
