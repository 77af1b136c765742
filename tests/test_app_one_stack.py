"""Every page on a decoder-only (GPT-2, Llama with grouped-query attention) and an encoder-only (BERT) folder,
through AppTest: each page runs and draws, or says in one translated line why its view does not apply; the
attention page shows the kinds the shape has, its GQA groups, the attention sinks and the map without the sink."""

from __future__ import annotations

import re

import numpy as np
import pytest

from i18n import _, language_scope
from model import capture, load_checkpoint
from tests.apptest_helpers import charts, open_page
from tests.hf_one_stack import BUILDERS
from tests.i18n_helpers import matching, msgid_starting, rendered
from ui.shell.shapes import ATTRIBUTION_MLM, ATTRIBUTION_PROMPT, GQA, NO_ATTRIBUTION, NO_DECODER
from ui.views.attribution_ui import SELF_WORDS
from ui.views.decoding_strategy import MENU
from ui.views.inside_sections import GEMMA_SCALE, LAYER_SCALE

pytestmark = pytest.mark.filterwarnings("ignore")
TEXT = "the cat sat on a mat"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("one-stack-app")
    return {name: BUILDERS[name](root).folder for name in ("gpt2", "llama-gqa", "bert-mlm", "bert")}


def no_error(at) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def _z(chart: dict) -> np.ndarray:
    """The first trace's z: plotly writes numpy arrays as {dtype, bdata (base64), shape}."""
    import base64

    z = chart["data"][0]["z"]
    if isinstance(z, dict) and "bdata" in z:
        array = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))
        shape = z.get("shape")
        return array.reshape([int(n) for n in str(shape).split(",")]) if shape else array
    return np.asarray(z, dtype=float)


@pytest.mark.parametrize(
    "page", ["attention", "inside", "positional", "decoding", "attribution", "model", "compare", "lecture_pack"]
)
@pytest.mark.parametrize("family", ["gpt2", "bert-mlm"])
def test_every_page_runs_on_a_decoder_only_and_an_encoder_only_model(folders, family, page):
    at = open_page(page, f"path:{folders[family]}", text=TEXT)
    no_error(at)
    if page == "decoding" and family == "bert-mlm":
        assert [i.value for i in at.info] == [_(NO_DECODER)]
    elif page == "attribution":  # what the rows and columns are, in one line per shape, then the charts
        note = ATTRIBUTION_PROMPT if family == "gpt2" else ATTRIBUTION_MLM
        assert _(note) in [c.value for c in at.caption] and charts(at)
    elif page == "lecture_pack":  # built for these shapes too, with the model (tests/test_pack_one_stack_browser.py)
        assert not at.info
        at.button(key="pack_build").click().run(timeout=120)
        no_error(at)
        assert [b.proto.label for b in at.get("download_button")] == [_("Download the lecture pack (.html)")]
        assert not at.info  # no "This pack runs no model of its own"
    elif page not in ("lecture_pack", "model"):
        assert charts(at), page


def test_the_attention_page_shows_the_kinds_the_shape_has(folders):
    at = open_page("attention", f"path:{folders['gpt2']}", text=TEXT)
    no_error(at)
    assert at.radio(key="att_kind").options == ["Decoder self (causal)"]
    at = open_page("attention", f"path:{folders['bert-mlm']}", text=TEXT)
    assert at.radio(key="att_kind").options == ["Encoder self"]
    model, tok = load_checkpoint(folders["bert-mlm"])
    cap = capture(model, tok, TEXT)
    z = _z(charts(at)[0]).astype(float)  # the average of heads of the last layer, [CLS] ... [SEP]
    np.testing.assert_allclose(z, cap.encoder_self[-1].mean(0), atol=1e-5)


def test_attention_sinks_map_and_the_map_without_the_sink(folders):
    model, tok = load_checkpoint(folders["llama-gqa"])
    at = open_page("attention", f"path:{folders['llama-gqa']}", text=TEXT, att_view="sinks")
    no_error(at)
    assert any(c.value == _(GQA).format(kv=2, heads=4, groups="0,1 | 2,3") for c in at.caption)
    share = _z(charts(at)[0]).astype(float)
    L, H = model.config.n_decoder_layers, model.config.n_heads
    assert share.shape == (L, H) and np.all((share >= 0) & (share <= 1))
    at = open_page("attention", f"path:{folders['llama-gqa']}", text=TEXT, att_view="one", att_head="0",
                   att_layer="0", att_nosink="1")  # fmt: skip
    no_error(at)
    full = open_page("attention", f"path:{folders['llama-gqa']}", text=TEXT, att_view="one", att_head="0",
                     att_layer="0")  # fmt: skip
    rest, whole = _z(charts(at)[0]).astype(float), _z(charts(full)[0]).astype(float)
    assert rest.shape == (whole.shape[0], whole.shape[1] - 1)
    # each row but the first (which saw only the first token) is the rest of the full row, renormalised
    want = whole[1:, 1:] / np.nansum(whole[1:, 1:], axis=1, keepdims=True)
    np.testing.assert_allclose(rest[1:], want, atol=1e-5, equal_nan=True)
    # the sink view's first layer, first head: the full map's first column averaged over queries 1..
    np.testing.assert_allclose(share[0, 0], np.nanmean(whole[1:, 0]), atol=1e-5)


@pytest.mark.parametrize("strategy", list(MENU))  # every strategy of the menu, from the registry
def test_a_decoder_only_model_continues_the_prompt_with_every_strategy(folders, strategy):
    at = open_page("decoding", f"path:{folders['gpt2']}", text=TEXT, dec_strategy=strategy)
    no_error(at)
    assert charts(at)


def test_the_pages_speak_chinese_on_the_new_shapes(folders):
    at = open_page("decoding", f"path:{folders['bert-mlm']}", text=TEXT, lang="zh")
    no_error(at)
    with language_scope("zh"):
        assert [i.value for i in at.info] == [_(NO_DECODER)]
        assert _(NO_DECODER) != NO_DECODER
    at = open_page("attention", f"path:{folders['llama-gqa']}", text=TEXT, lang="zh")
    no_error(at)
    with language_scope("zh"):
        assert any(c.value == _(GQA).format(kv=2, heads=4, groups="0,1 | 2,3") for c in at.caption)


def test_berts_sinks_view_names_its_other_special_token(folders):
    """[CLS] is the first token; [SEP] (a well-known sink of BERT) gets its share in the hover."""
    model, tok = load_checkpoint(folders["bert-mlm"])
    cap = capture(model, tok, TEXT)
    at = open_page("attention", f"path:{folders['bert-mlm']}", text=TEXT, att_view="sinks")
    no_error(at)
    trace = charts(at)[0]["data"][0]
    assert "[SEP]" in trace["hovertemplate"] and "[CLS]" in trace["hovertemplate"]
    shown = _z({"data": [{"z": trace["customdata"]}]}).astype(float)
    np.testing.assert_allclose(shown, cap.encoder_self[..., -1].mean(-1), atol=1e-5)  # [SEP] is the last key


def _bars(at, token: str) -> dict:
    title = _("What explains output token {t} “{token}”?").format(t=0, token=token)
    return next(c for c in charts(at) if c["layout"]["title"]["text"] == title)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("which", ["demo:reverse_decoder_rope", "gpt2"])
def test_the_attribution_page_explains_the_continuation_by_the_prompt(folders, which, lang):
    """A decoder-only model: each method's row over the prompt's tokens is attribute()'s for the continuation's first
    token, and the raw attention beside them is the self-attention row of the prompt's last position (it writes that
    token) over the prompt, in English and Chinese."""
    from model import attribute
    from tests.apptest_helpers import ROOT

    path = str(ROOT / "checkpoints" / "reverse_decoder_rope") if which.startswith("demo:") else str(folders[which])
    text = "stressed=" if which.startswith("demo:") else TEXT
    at = open_page("attribution", which if which.startswith("demo:") else f"path:{path}", text=text, lang=lang)
    no_error(at)
    model, tok = load_checkpoint(path)
    occ = attribute(model, tok, text, method="occlusion")
    P = len(occ.source_tokens)
    cap = capture(model, tok, text, tok.target.detokenize(occ.output_tokens))
    with language_scope(lang):
        fig = _bars(at, occ.output_tokens[0])
    np.testing.assert_allclose(np.asarray(_z({"data": [{"z": fig["data"][2]["x"]}]}), float), occ.scores[0], atol=1e-5)
    last = model.config.n_decoder_layers - 1
    want = cap.decoder_self[last].mean(0)[P - 1, :P]
    np.testing.assert_allclose(np.asarray(_z({"data": [{"z": fig["data"][3]["x"]}]}), float), want, atol=1e-5)
    with language_scope(lang):
        titles = [a["text"].replace("<br>", " ") for a in fig["layout"]["annotations"]]
        assert _(SELF_WORDS.average).format(layer=last) in titles
        assert _(ATTRIBUTION_PROMPT) in [c.value for c in at.caption]
        if lang == "zh":
            assert _(ATTRIBUTION_PROMPT) != ATTRIBUTION_PROMPT


def test_an_encoder_without_an_output_head_has_nothing_to_explain(folders):
    at = open_page("attribution", f"path:{folders['bert']}", text=TEXT)
    no_error(at)
    assert [i.value for i in at.info] == [_(NO_ATTRIBUTION)] and not charts(at)


@pytest.mark.parametrize("family", ["gpt2", "bert-mlm"])
@pytest.mark.parametrize("view", ["head view", "model view"])
def test_bertviz_draws_the_one_stack(folders, family, view):
    """bertviz's views of a one-stack model: its one kind of attention over its tokens, a decoder's rows (left)
    labelled with the tokens they write (the app's row convention), an encoder's with its own tokens."""
    at = open_page("attention", f"path:{folders[family]}", text=TEXT, att_view="bertviz", att_bertviz=view)
    no_error(at)
    frames = at.get("iframe")
    assert len(frames) == 1
    page = frames[0].proto.srcdoc
    import json
    import re

    from viz.bertviz_view import prettify

    model, tok = load_checkpoint(folders[family])
    cap = capture(model, tok, TEXT)  # the text's own tokens: the page's sequence starts with them
    decoder = model.config.shape == "decoder-only"
    name = "Decoder" if decoder else "Encoder"
    found = re.search(rf'"name":"{name}".*?"left_text":(\[.*?\]),"right_text":(\[.*?\])\}}', page, re.S)
    assert found, name
    left, right = json.loads(found.group(1)), json.loads(found.group(2))
    tokens = cap.target_tokens if decoder else cap.source_tokens
    assert right[: len(tokens)] == prettify(tokens)
    # the row convention: a decoder row is the token it writes (the next one), an encoder row its own token
    assert left[:-1] == right[1:] if decoder else left == right


@pytest.mark.parametrize("family", ["bert-mlm", "gpt2"])
def test_the_mask_token_is_offered_where_the_vocabulary_has_one(folders, family):
    """The Attribution page's occlusion and integrated-gradients settings offer the mask token for BERT, whose link
    may ask for it (occlusion's bars are then attribute()'s with [MASK]); for GPT-2 the same link is not valid here."""
    from model import attribute
    from ui.shell.url_state import Key, invalid_warning

    at = open_page("attribution", f"path:{folders[family]}", text=TEXT, attr_occ="mask")
    no_error(at)
    occ_box = next(s for s in at.selectbox if s.key == "attr_occ")
    base_box = next(s for s in at.selectbox if s.key == "attr_base")
    has_mask = family == "bert-mlm"
    assert (_("the mask token") in occ_box.options) is has_mask  # the options as shown (format_func)
    assert (_("the mask token everywhere") in base_box.options) is has_mask
    assert occ_box.value == ("mask" if has_mask else "unk")
    warned = invalid_warning(Key("attr_occ")) in [w.value for w in at.warning]
    assert warned is not has_mask
    if has_mask:
        model, tok = load_checkpoint(folders[family])
        occ = attribute(model, tok, TEXT, method="occlusion", replacement="mask")
        fig = _bars(at, occ.output_tokens[0])
        bars = np.asarray(_z({"data": [{"z": next(d["x"] for d in fig["data"] if d.get("name") == _("Occlusion"))}]}))
        np.testing.assert_allclose(bars.astype(float), occ.scores[0], atol=1e-5)


def test_inside_says_each_layer_of_stanford_crfms_gpt2_divides_by_its_number_too(tmp_path):
    """scale_attn_by_inverse_layer_idx: the Inside page's step 3 gives the paper's √d_k, and the model's own divisor
    (√d_k times the layer's number + 1) in its own caption, not Gemma's √query_pre_attn_scalar."""
    folder = BUILDERS["gpt2-crfm"](tmp_path).folder
    d_k = load_checkpoint(folder)[0].config.d_head
    at = open_page("inside", f"path:{folder}", text=TEXT, in_kind="decoder_self", in_layer="2", in_head="1")
    no_error(at)
    paper = msgid_starting("Dot products of d_k = {d_k} terms grow like √d_k")
    assert rendered(paper, d_k=d_k, scale=f"{d_k**0.5:.3g}") in [m.value for m in at.markdown]
    captions = [c.value for c in at.caption]
    assert rendered(LAYER_SCALE, layer=2, scale=f"{3 * d_k**0.5:.3g}") in captions
    assert not any(re.fullmatch(matching(GEMMA_SCALE), c) for c in captions)


def test_a_model_compared_with_itself_reads_its_own_output_token_for_token(folders):
    """Model B the same GPT-2 folder as A, both reading A's output: B reads A's very ids (the two vocabularies name
    them the same tokens), so the rows line up and A − B is zero. The output written out and tokenized again is
    other ids for this byte-level model (half characters), which the page used to feed B: it said the two decoders
    read different inputs."""
    from model.decoding import greedy_ids
    from model.text.inputs import prepare_sequence
    from ui.views.compare_models import WHY, same_tokens

    model, tok = load_checkpoint(folders["gpt2"])
    prompt = prepare_sequence(model, tok, TEXT).ids
    out = [i for i in greedy_ids(model, [prompt], bos_id=tok.target.bos_id, eos_id=tok.target.eos_id)[0]
           if i != tok.target.eos_id]  # fmt: skip
    again = prepare_sequence(model, tok, TEXT, tok.target.detokenize(tok.target.decode(out))).ids[len(prompt) :]
    assert again != out  # (the text's round trip loses them: the case this test is about)
    size = model.config.tgt_vocab_size
    assert same_tokens(out, tok.target, tok.target, size) and not same_tokens(out, tok.target, tok.target, max(out))
    _, other = load_checkpoint(folders["llama-gqa"])  # another vocabulary: the text is what B can read
    assert not same_tokens(out, tok.target, other.target, size)
    at = open_page("compare", f"path:{folders['gpt2']}", text=TEXT, model_b=f"path:{folders['gpt2']}")
    no_error(at)
    assert not [i.value for i in at.info if re.search(matching(WHY["target_tokens"]), i.value)]
    (fig,) = charts(at)  # one figure: A, B and A − B
    diff = [_z({"data": [t]}) for t in fig["data"] if t.get("xaxis") == "x3"]
    assert len(diff) == 1 and diff[0].shape == (len(prompt) + len(out),) * 2
    assert np.nanmax(np.abs(diff[0])) == 0


def test_the_attention_page_explains_subword_marks_for_subword_vocabularies_only(folders):
    """GPT-2's tokens are spelled `Ġthe`, BERT's `##ing`: for a subword vocabulary the attention page's row of
    explanations has one on these marks (in the reader's language); a char-level demo's has none."""
    from ui.shell.explain import TEXTS

    title = TEXTS["pieces"][0]
    for lang in ("en", "zh"):
        for family in ("gpt2", "bert"):
            at = open_page("attention", f"path:{folders[family]}", text=TEXT, lang=lang)
            no_error(at)
            with language_scope(lang):
                assert _(title) in [e.label for e in at.expander], (lang, family)
    at = open_page("attention", "demo:reverse", text="stressed")
    no_error(at)
    assert _(title) not in [e.label for e in at.expander] and _(TEXTS["specials"][0]) in [e.label for e in at.expander]
