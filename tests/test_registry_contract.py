"""Every registered entry through every consumer (issue 31): each decoding strategy in the page's menu, each positional
kind, each change of positions at inference and each
attribution method is opened on its page (AppTest), its settings go into the link and come back, and its download
holds its result. The lists come from the registries: an entry added later is in these tests without a line here,
and fails them if it misses a consumer."""

from __future__ import annotations

import json

import pytest

from model.analysis.attribution_methods.registry import METHODS
from model.network.position_kinds.registry import MODULES as POSITIONAL_KINDS
from tests.apptest_helpers import charts, open_page
from tests.browser_helpers import letters_checkpoint
from ui.views.decoding_strategy import MENU
from ui.views.positional_interventions import KINDS as POSITION_CHANGES


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return letters_checkpoint(tmp_path_factory.mktemp("contract"), card={"examples": ["cafe"]})


def other_value(setting, vocab_size: int):
    """A valid value of a setting that is not its default (the link must carry it)."""
    low, high = setting.bounds(vocab_size)
    value = setting.default + setting.step if setting.default + setting.step <= high else setting.default - setting.step
    assert low <= value <= high
    return setting.cast(value)


@pytest.mark.parametrize("link", list(MENU))
def test_each_strategy_draws_its_view_keeps_its_settings_in_the_link_and_downloads(ckpt, link):
    module = MENU[link]
    params = {s.link: str(other_value(s, 9)) for s in module.SETTINGS}
    at = open_page("decoding", f"path:{ckpt}", text="cafe", dec_strategy=link, **params)
    assert not at.exception, at.exception
    assert charts(at), link  # its view drew
    for key, value in params.items():  # its settings came back into the link as they went in
        assert float(at.query_params[key]) == pytest.approx(float(value)), key
    assert at.query_params.get("dec_strategy", next(iter(MENU))) == link
    assert at.get("download_button"), link  # its result can be taken away


@pytest.mark.parametrize("method", list(METHODS))
def test_each_attribution_method_is_computed_when_picked_shown_linked_and_downloaded(method):
    from model import load_checkpoint
    from tests.apptest_helpers import ROOT

    module = METHODS[method]
    _, tok = load_checkpoint(ROOT / "checkpoints" / "reverse")
    choices = {c.link: str(c.options_for(tok)[-1]) for c in module.SETTINGS}  # one the model has, not the first
    at = open_page("attribution", "demo:reverse", text="abcd", attr_methods=method, attr_matrix=method, **choices)
    assert not at.exception, at.exception
    assert method in at.query_params["attr_methods"].split(",")
    for key, value in choices.items():
        assert at.query_params[key] == value, key
    assert at.query_params["attr_matrix"] == method
    titles = [c["layout"]["title"]["text"] for c in charts(at)]
    assert module.TITLE in titles  # the matrix of this method
    button = next(b for b in at.get("download_button") if b.proto.label.endswith("(.json)"))
    assert button is not None
    from ui.serving import caches

    cached = [v for k, (v, _n) in caches.ATTRIBUTIONS._values.items() if k[3] == method]
    assert cached and cached[-1].method == method  # computed through the registry's compute
    from model.analysis.attribution import attributions_json

    data = json.loads(attributions_json({method: cached[-1]}))
    assert method in data["methods"] and len(data["methods"][method]["scores"]) == len(cached[-1].output_tokens)


@pytest.fixture(scope="module")
def kind_checkpoints(tmp_path_factory):
    """A small letters model of every registered positional kind (the list from the registry)."""
    from model import Tokenizer, TransformerConfig, Vocab, build_model, save_checkpoint
    from model.network.position_kinds.registry import MODULES

    vocab = Vocab.build("abcdefgh", level="char")
    folder = tmp_path_factory.mktemp("kinds")
    out = {}
    for name in MODULES:
        config = TransformerConfig.preset("tiny", src_vocab_size=len(vocab), tgt_vocab_size=len(vocab),
                                          n_heads=2, max_len=24, positional=name)  # fmt: skip
        out[name] = folder / name
        save_checkpoint(build_model(config, seed=1), Tokenizer(vocab, vocab), out[name], card={"examples": ["cafe"]})
    return out


@pytest.mark.parametrize("name", list(POSITIONAL_KINDS))
def test_each_positional_kind_is_described_and_drawn_by_its_pages(kind_checkpoints, name):
    from i18n import _
    from model.network.position_kinds.registry import kind
    from ui.views import positional_views

    ckpt = f"path:{kind_checkpoints[name]}"
    at = open_page("model", ckpt, text="cafe")
    assert not at.exception, at.exception
    assert any(_(kind(name).DESCRIPTION) in m.value for m in at.markdown)  # the Model page's line is the kind's
    at = open_page("positional", ckpt, text="cafe", pe_view="mine")
    assert not at.exception, at.exception
    assert at.query_params["pe_view"] == "mine"
    if name in positional_views.VIEWS:  # a view of its own, opened from a link
        at = open_page("positional", ckpt, text="cafe", pe_view=name)
        assert not at.exception, at.exception
        assert at.query_params["pe_view"] == name and charts(at)


@pytest.mark.parametrize("kind", list(POSITION_CHANGES))
def test_each_position_change_is_applied_linked_and_worded_by_the_positional_page(kind_checkpoints, kind):
    from i18n import _
    from ui.views import positional_interventions as page

    change = page.KINDS[kind]
    params = {f"{page.PREFIX}_pos": kind} | ({f"{page.PREFIX}_{change.setting}": "2"} if change.setting else {})
    at = open_page("positional", f"path:{kind_checkpoints['sinusoidal']}", text="cafe", pe_view="infer", **params)
    assert not at.exception, at.exception
    for key, value in params.items():  # the kind's own link form came back as it went in
        assert at.query_params[key] == value, key
    what = _(change.what).format(k=2)
    assert any(what in m.value for m in at.markdown), what  # its sentence on the page is the kind's
