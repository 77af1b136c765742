"""No word of a stack the model does not have, on any view of any page (harness/hall.VIEWS), for the one-sequence
shapes: the decoder-only demo and a tiny BERT folder (an encoder-decoder has every stack, so no word is out of place).

The words come from ui/shell/shapes.WORDS: the encoder-decoder's attention kinds the model lacks ("encoder self",
"decoder self", "cross") and its source side ("source", its every-output-by-every-source heading). Each view runs
once, through AppTest (the paper's sinusoids alone, the same for every model, are left out); both languages are
checked from that run: every message the run translated (recorded as it is looked up in the catalog) in English and
in Chinese, and every text on the page (tokens and numbers included). The lines that say why a view does not apply
name the missing stack on purpose and are left out."""

from __future__ import annotations

import html
import json
import re
from types import SimpleNamespace

import pytest

import i18n
from i18n import _, language_scope
from tests.apptest_helpers import open_page
from tests.hf_one_stack import BUILDERS
from ui.shell import shapes
from ui.shell.shapes import WORDS, kinds_of

pytestmark = pytest.mark.filterwarnings("ignore")
FULL = WORDS["encoder-decoder"]
EXPLAINS_ABSENCE = (shapes.NO_ENCODER, shapes.NO_DECODER, shapes.NO_KIND_IN_B, shapes.NO_ATTRIBUTION)
TEXT = {"decoder-only": "stressed=", "encoder-only": "the cat sat on a mat"}


def _kinds(text: str) -> list[str]:
    return [k.strip() for k in re.split(r"[,、]", text) if k.strip()]


def out_of_place(shape: str, lang: str) -> list[str]:
    """The words of stacks a model of `shape` lacks, in `lang`: the encoder-decoder's kinds it does not have, and
    the encoder-decoder's source side (a one-sequence model reads no source)."""
    own = kinds_of(SimpleNamespace(has_encoder=shape != "decoder-only", has_decoder=shape != "encoder-only"))
    with language_scope(lang):
        kinds = zip(_kinds(FULL.kinds), _kinds(_(FULL.kinds)), strict=True)  # English (as kinds_of names them), shown
        side = _(FULL.sides["decoder_self"][0])  # the decoder input: what a one-sequence model's single sequence is not
        return [shown for english, shown in kinds if english not in own] + [_(FULL.reads), _(FULL.matrix), side]


def found(words: list[str], text: str) -> list[str]:
    """The words that occur in `text` as words (Latin: between word boundaries; Chinese: not inside a longer word
    such as 资源, "resource")."""
    hits = []
    for w in words:
        pattern = rf"\b{re.escape(w)}\b" if w.isascii() else rf"(?<![资来电能开]){re.escape(w)}"
        if re.search(pattern, text, flags=re.IGNORECASE):
            hits.append(w)
    return hits


def test_the_words_out_of_place_are_the_missing_stacks_words():
    assert set(out_of_place("decoder-only", "en")) == {
        "encoder self",
        "cross",
        "source",
        _(FULL.matrix),
        "decoder input",
    }
    assert set(out_of_place("encoder-only", "en")) == {
        "decoder self",
        "cross",
        "source",
        _(FULL.matrix),
        "decoder input",
    }
    assert "交叉注意力" in out_of_place("encoder-only", "zh") and "源" in out_of_place("decoder-only", "zh")
    assert found(["source"], "one source, two") == ["source"] and not found(["source"], "sources, resource")
    assert found(["源"], "每个源词元") == ["源"] and not found(["源"], "资源")
    frame = "<script>a.cross(source)</script><style>.cross{}</style><select><option>Cross</option></select>"
    assert found(["cross", "source"], visible(frame)) == ["cross"]  # what the frame shows, not its code


def visible(document: str) -> str:
    """The text an HTML document (a frame's) shows: its scripts and styles (bertviz's code) and its tags left out."""
    document = re.sub(r"(?is)<(script|style)\b.*?</\1\s*>", " ", document)
    return html.unescape(re.sub(r"(?s)<[^>]*>", " ", document))


def _strings(value) -> list[str]:
    """Every string inside a proto's fields (a chart's figure JSON read as its texts, a frame's HTML as it shows)."""
    if isinstance(value, dict):
        skip = ("id", "formId", "key", "family")  # ids, and chart fonts' names ("Source Sans")
        return [
            s
            for k, v in value.items()
            if k not in skip
            for s in ([visible(v)] if k == "srcdoc" and isinstance(v, str) else _strings(v))
        ]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, str):
        if value[:1] in "{[":
            try:
                return _strings(json.loads(value))
            except ValueError:
                pass
        return [value]
    return []


def page_texts(at) -> str:
    from google.protobuf.json_format import MessageToDict

    texts = []
    for root in (at.main, at.sidebar):
        stack = [root]
        while stack:
            node = stack.pop()
            stack.extend(getattr(node, "children", {}).values())
            proto = getattr(node, "proto", None)
            if proto is not None and node.type != "html":  # st.html: the page's CSS and scripts
                texts += _strings(MessageToDict(proto))
    return "\n".join(texts)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    bert = BUILDERS["bert-mlm"](tmp_path_factory.mktemp("shape-words")).folder
    return {"decoder-only": "demo:reverse_decoder_rope", "encoder-only": f"path:{bert}"}


@pytest.fixture
def looked_up(monkeypatch):
    """Every message translated during a run (the catalog's lookups)."""
    seen: set[str] = set()
    catalogs = i18n.translations

    class Recording:
        def __init__(self, catalog):
            self.catalog = catalog

        def gettext(self, message):
            seen.add(message)
            return self.catalog.gettext(message)

        def ngettext(self, singular, plural, n):
            seen.update((singular, plural))
            return self.catalog.ngettext(singular, plural, n)

    monkeypatch.setattr(i18n, "translations", lambda code: Recording(catalogs(code)))
    return seen


@pytest.mark.parametrize("shape", ["decoder-only", "encoder-only"])
def test_no_view_names_a_stack_the_model_does_not_have(models, looked_up, shape):
    from harness.hall import SAME_FOR_EVERY_MODEL, VIEWS

    absent = {_(m) for m in EXPLAINS_ABSENCE}
    words = {lang: out_of_place(shape, lang) for lang in ("en", "zh")}
    problems, runs = [], 0
    for page, params in VIEWS:
        if params.get("model") or params.get("pe_view") in SAME_FOR_EVERY_MODEL:
            continue  # another model's view (RoPE's demo), or the paper's sinusoids, the same for every model
        looked_up.clear()
        at = open_page(page, models[shape], text=TEXT[shape], **params)
        assert not at.exception, (page, params, at.exception)
        runs += 1
        shown = page_texts(at)
        for text in absent:
            shown = shown.replace(text, "")
        # a word on the page that no translated message holds: an untranslated text or a token says it
        said = "\n".join(looked_up)
        problems += [f"{page} {params}: {w!r} on the page" for w in found(words["en"], shown) if not found([w], said)]
        for message in looked_up - set(EXPLAINS_ABSENCE):
            with language_scope("zh"):
                chinese = _(message)
            problems += [f"{page} {params}: {w!r} in {message[:60]!r}" for w in found(words["en"], message)]
            problems += [f"{page} {params}: {w!r} in {chinese[:40]!r}" for w in found(words["zh"], chinese)]
    assert runs > 20 and not problems, "\n".join(sorted(set(problems)))
