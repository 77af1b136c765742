"""Translations (issue 16): the catalogs match the tree, every marked string has Chinese, placeholders survive,
messages made outside a run translate where shown, and the charts, bertviz and the lecture pack follow the language.

After adding strings: .venv/bin/python scripts/i18n.py sync, translate what `scripts/i18n.py missing` lists in
i18n/locale/zh/LC_MESSAGES/messages.po, then scripts/i18n.py compile.
"""

from __future__ import annotations

import ast
import gettext
import io
import pickle
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from i18n import LOCALE_DIR, M_, NM_, _, error_text, join_messages, language, language_scope, normalize
from tests.i18n_helpers import msgid_starting

ROOT = Path(__file__).resolve().parents[1]

FIX = "run: .venv/bin/python scripts/i18n.py sync, translate, then scripts/i18n.py compile"


def _script():
    """scripts/i18n.py, loaded under another name (the package i18n owns that name)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("i18n_script", ROOT / "scripts" / "i18n.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = _script()
SOURCES = [
    ROOT / "app.py",
    ROOT / "app_script.py",
    *sorted((ROOT / "pages").glob("*.py")),
    *sorted((ROOT / "ui").rglob("*.py")),
    *sorted((ROOT / "viz").glob("*.py")),
    *sorted((ROOT / "pack").glob("*.py")),
]
SOURCES += sorted((ROOT / "model").rglob("*.py")) + sorted((ROOT / "tasks").rglob("*.py"))


# -- the catalogs --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def zh_po():
    return TOOL.read_catalog(TOOL.po_path("zh"))


def test_the_compiled_catalog_is_the_po_compiled(zh_po):
    from babel.messages.mofile import write_mo

    buffer = io.BytesIO()
    write_mo(buffer, zh_po)
    buffer.seek(0)
    fresh = gettext.GNUTranslations(buffer)
    with open(TOOL.mo_path("zh"), "rb") as fh:
        committed = gettext.GNUTranslations(fh)
    assert committed._catalog == fresh._catalog, f"messages.mo is older than messages.po: {FIX}"
    assert len(fresh._catalog) > 500


def test_every_string_the_tree_marks_is_translated():
    """Extraction over app.py, pages/, ui/, viz/, model/ and tasks/ finds no msgid the .po lacks, leaves empty or marks fuzzy."""
    left = TOOL.missing("zh")
    assert left == [], f"{len(left)} strings without Chinese ({FIX}): " + "; ".join(f"{m!r}: {why}" for m, why in left)


# {name} and {n:,} for str.format, %{y:.3f} for plotly's hover templates (LaTeX groups such as {QK^\top} are not)
PLACEHOLDER = re.compile(r"%?\{\w*(?::[^{}]*)?\}")


@pytest.mark.parametrize("lang", ["zh"])
def test_every_translation_keeps_the_placeholders_of_its_msgid(lang):
    catalog = TOOL.read_catalog(TOOL.po_path(lang))
    wrong = []
    for message in catalog:
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, (list, tuple)) else (message.id,)
        strings = message.string if isinstance(message.string, (list, tuple)) else (message.string,)
        expected = Counter(PLACEHOLDER.findall(ids[-1]))  # the plural form names {n}, as the singular does
        for text in strings:
            if text and Counter(PLACEHOLDER.findall(text)) != expected:
                wrong.append((ids[0], text))
    assert wrong == []


def _emphasis(text: str) -> tuple[int, int, int]:
    """(bold runs, italic runs, asterisks left as plain text) of `text` read as CommonMark, as st.markdown reads it;
    placeholders stand for a word (a value is never empty)."""
    from markdown_it import MarkdownIt

    bold = italic = stars = 0
    for token in MarkdownIt("commonmark").parseInline(PLACEHOLDER.sub("X", text)):
        for child in token.children or []:
            bold += child.type == "strong_open"
            italic += child.type == "em_open"
            stars += child.content.count("*") if child.type == "text" else 0
    return bold, italic, stars


@pytest.mark.parametrize("lang", ["zh"])
def test_every_translation_keeps_the_bold_and_italics_of_its_msgid(lang):
    """CommonMark closes ** only where it is not wedged between punctuation and a letter: "**模型 A：**reverse" shows
    its asterisks (a full-width colon is punctuation), "**模型 A**：reverse" is bold."""
    wrong = []
    for message in TOOL.read_catalog(TOOL.po_path(lang)):
        ids = message.id if isinstance(message.id, (list, tuple)) else (message.id,)
        strings = message.string if isinstance(message.string, (list, tuple)) else (message.string,)
        if not message.id or "*" not in ids[0]:
            continue
        wrong += [(ids[0], text) for text in strings if text and _emphasis(text) != _emphasis(ids[0])]
    assert wrong == []


def _marker_calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in TOOL_MARKERS:
            yield node


TOOL_MARKERS = {"_", "N_", "M_", "NM_", "ngettext"}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_marked_strings_are_literal_and_underscore_is_never_a_local(path):
    """_(f"...") cannot be in the catalog (format after translating), and a function that assigns `_` (a throwaway
    loop variable) cannot call _() for translation."""
    tree = ast.parse(path.read_text(), str(path))
    fstrings = [n.lineno for n in _marker_calls(tree) if n.args and isinstance(n.args[0], ast.JoinedStr)]
    assert fstrings == [], f"{path.name}: f-string inside a translation marker at lines {fstrings}"
    # Babel reads a whole f-string as one token before Python 3.12: a marker inside one is never extracted.
    hidden = [
        call.lineno
        for joined in ast.walk(tree)
        if isinstance(joined, ast.JoinedStr)
        for call in _marker_calls(joined)
        if call.args and isinstance(call.args[0], ast.Constant)
    ]
    assert hidden == [], f"{path.name}: a marked literal inside an f-string (never extracted) at lines {hidden}"
    shadowed = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            continue
        body = fn.body if isinstance(fn, ast.Module) else [fn]
        names = [
            n
            for stmt in body
            for n in ast.walk(stmt)
            if isinstance(n, ast.Name)
            and n.id == "_"
            and isinstance(n.ctx, ast.Store)
            and not _in_comprehension(stmt, n)
        ]
        calls = [
            n for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "_"
        ]
        if names and calls and not isinstance(fn, ast.Module):
            shadowed.append(fn.name)
    assert shadowed == [], f"{path.name}: `_` is assigned and called in {shadowed}"


def _in_comprehension(root: ast.AST, name: ast.Name) -> bool:
    """Whether `name` is a comprehension's target (its own scope: it does not shadow the function's `_`)."""
    for node in ast.walk(root):
        if isinstance(node, ast.comprehension) and any(n is name for n in ast.walk(node.target)):
            return True
    return False


# -- messages ------------------------------------------------------------------------------------


def test_a_message_is_english_text_until_shown_then_translated_with_its_values():
    inner = M_("opening server folders is turned off on this server")
    outer = M_("Could not open the linked model: {reason}.", reason=inner)
    assert outer == outer.template.format(reason=inner.template)  # the English text, the inner message in place
    with language_scope("zh"):
        shown = _(outer)
        assert shown == _("Could not open the linked model: {reason}.").format(reason=_(str(inner)))
    assert "本服务器" in shown and "opening" not in shown
    assert _(outer) == str(outer)  # English outside the scope


def test_messages_survive_pickling_and_exceptions_carry_them():
    count = NM_("{n} input cut to {max} characters.", "{n} inputs cut to {max} characters.", 3, max=500)  # a plural
    joined = join_messages(" | ", [count, M_("missing keys: {keys}", keys="a, b"), "plain"])
    again = pickle.loads(pickle.dumps(joined))  # st.cache_data pickles records holding messages
    assert again == joined and again.parts[0] == count.plural.format(n=3, max=500)  # the plural chosen for 3
    err = ValueError(again)
    with language_scope("zh"):
        text = error_text(err)
    assert text.endswith(" | plain") and "500" in text and "a, b" in text and "inputs cut" not in text
    assert error_text(ValueError("plain words")) == "plain words"


def test_an_empty_string_is_not_the_catalog_header():
    with language_scope("zh"):
        assert _("") == ""


@pytest.mark.parametrize(
    "raw, code", [("zh", "zh"), ("zh-CN", "zh"), ("zh_Hans_CN", "zh"), ("EN-us", "en"), ("fr", "en"), (None, "en")]
)
def test_language_codes_from_links_and_browsers(raw, code):
    assert normalize(raw) == code


def test_the_language_belongs_to_the_thread_that_set_it():
    import threading

    seen = []
    with language_scope("zh"):
        worker = threading.Thread(target=lambda: seen.append(language()))
        worker.start()
        worker.join()
        assert language() == "zh"
    assert seen == ["en"]  # a session served by another thread keeps its own language


def test_the_input_check_speaks_the_readers_language(char_tokenizer):
    from model.text.inputs import check_text

    check = check_text("ABC\x07", char_tokenizer.source, 20)
    assert check.errors and check.warnings
    assert check.errors[0].template == msgid_starting("None of the {what}'s symbols")
    with language_scope("zh"):
        shown = [_(m) for m in check.errors + check.warnings]
    assert all(re.search(r"[\u4e00-\u9fff]", m) for m in shown)
    assert "“A”" in shown[0] and "input" not in shown[0]


# -- what viz/ builds follows the language -------------------------------------------------------


def _builders():
    from viz import attention_figs, inside_figs, overview_figs, positional_figs

    w = np.full((2, 3), 1 / 3)
    return {
        "heatmap": lambda: attention_figs.attention_heatmap(w, ["a", "b"], ["x", "y", "z"]),
        "overview": lambda: overview_figs.layer_head_overview(np.full((1, 2, 2, 3), 1 / 3)),
        "scores": lambda: inside_figs.scores(np.ones(3), None, np.ones(3, bool), ["x", "y", "z"]),
        "pe": lambda: positional_figs.pe_matrix(np.zeros((4, 4))),
    }


@pytest.mark.parametrize("name", ["heatmap", "overview", "scores", "pe"])
def test_charts_name_cjk_fonts_and_speak_chinese(name):
    with language_scope("zh"):
        fig = _builders()[name]()
    family = fig.layout.font.family or ""
    assert "WenQuanYi Micro Hei" in family and "Noto Sans CJK SC" in family and family.endswith("sans-serif")
    # Streamlit's chart theme names its own font for titles and hover labels: the figure must name its stack there too
    assert fig.layout.title.font.family == family and fig.layout.hoverlabel.font.family == family
    texts = [fig.layout.title.text or ""] + [a.title.text or "" for a in fig.select_xaxes()]
    texts += [note.text or "" for note in fig.layout.annotations]  # subplot titles
    assert any(re.search(r"[\u4e00-\u9fff]", t) for t in texts), texts


def test_bertviz_model_view_writes_its_own_words_in_chinese():
    from viz.bertviz_view import _MODEL_VIEW_WORDS, model_view_html

    w = [np.full((1, 2, n, m), 1 / m) for n, m in ((3, 3), (2, 2), (2, 3))]
    english = model_view_html(*w, ["a", "b", "c"], ["x", "y"])
    with language_scope("zh"):
        chinese = model_view_html(*w, ["a", "b", "c"], ["x", "y"])
    for stock, _translated in _MODEL_VIEW_WORDS:
        assert stock in english and stock not in chinese  # the patch found bertviz's text
    assert '<html lang="zh">' in chinese and "悬停" in chinese and "编码器" in chinese


def test_the_lecture_pack_is_written_in_the_current_language():
    from pack.page import lecture_pack_html
    from tests.test_lecture_pack import fake_records, pack_data

    records = fake_records()
    with language_scope("zh"):
        page = lecture_pack_html(records)
        step = _("Step {i} of {n}")
    data = pack_data(page)
    assert data["text"]["step"] == step and "步" in step  # what the script writes on the step slider
    outside_scripts = re.sub(r"<script.*?</script>", "", page, flags=re.DOTALL)
    assert page.startswith('<!doctype html><html lang="zh-CN">')
    assert "讲义包" in outside_scripts and "位置编码" in outside_scripts
    for english in ("Every layer and head at once", "Contents", "Step-by-step greedy decoding", "Source tokens:"):
        assert english not in outside_scripts


def test_catalogs_live_where_the_app_reads_them():
    assert (LOCALE_DIR / "zh" / "LC_MESSAGES" / "messages.mo").is_file()
    assert TOOL.mo_path("zh") == LOCALE_DIR / "zh" / "LC_MESSAGES" / "messages.mo"


def test_todo_lists_what_to_translate_and_merge_takes_it_back(tmp_path, monkeypatch):
    """The lead's step after merging pages with new strings: todo -> fill the small file -> merge."""
    import shutil

    from babel.messages.pofile import write_po

    po = tmp_path / "messages.po"
    shutil.copy(TOOL.po_path("zh"), po)
    original = TOOL.read_catalog(po)
    monkeypatch.setattr(TOOL, "po_path", lambda lang: po)
    monkeypatch.setattr(TOOL, "compile_catalogs", lambda: None)

    def save(catalog, path):
        with open(path, "wb") as fh:
            write_po(fh, catalog, width=0)

    catalog = TOOL.read_catalog(po)  # as after `update` with a new string and a changed one
    catalog["Model"].string = ""
    catalog["Step"].flags.add("fuzzy")
    save(catalog, po)
    assert TOOL.todo(tmp_path / "todo.po") == 2
    todo = TOOL.read_catalog(tmp_path / "todo.po")
    assert sorted(m.id for m in todo if m.id) == ["Model", "Step"]
    todo["Model"].string = "模型"
    todo["Step"].flags.discard("fuzzy")  # checked by a person
    save(todo, tmp_path / "todo.po")
    assert TOOL.merge(tmp_path / "todo.po") == 2
    merged = TOOL.read_catalog(po)
    assert merged["Model"].string == "模型" and not merged["Step"].fuzzy
    assert [m.id for m in merged] == [m.id for m in original]  # nothing else lost or added
