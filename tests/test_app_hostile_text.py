"""Issue 22: text from visitors is text everywhere. A link's text, target and model names carry Markdown (an
image that would make every visitor's browser fetch an outside URL, a phishing link, raw HTML, LaTeX, a
Streamlit colour directive); every page and the compare page's model B show messages that quote them. Every
Markdown element the pages send (markdown, caption, alerts, widget labels and help) is rendered with CommonMark
here: none may hold a link or an image, and no outside address may stand in it unescaped (GFM autolinks)."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from i18n import M_, join_messages, language_scope
from tests.apptest_helpers import open_page
from tests.i18n_helpers import msgid, rendered
from ui.shell.navigation import PAGES
from ui.shell.safe_text import code, esc, md

UNKNOWN = msgid("Not in the vocabulary, read as <unk>: {symbols}.")

IMAGE = "![w](http://127.0.0.1:9/warn.png)"
LINK = "[evil](http://evil.example/phish)"
HOSTILE = (
    f"the red apple {IMAGE} {LINK} <img src=x onerror=alert(1)> $x^2$ :red[alarm] **bold** www.evil.example "
    "mallory@evil.example"
)
MARKERS = ("127.0.0.1:9", "evil.example", "onerror", "alarm", "x^2")
NOT_MARKDOWN = {"TextArea", "TextInput", "Html", "Latex", "Code", "Json", "UnknownElement"}  # inputs, our own CSS, ...
RENDER = MarkdownIt("commonmark")


def nodes(at) -> list:
    found, todo = [], [at._tree]
    while todo:
        node = todo.pop()
        children = getattr(node, "children", None)
        if isinstance(children, dict):
            todo.extend(children.values())
            found.extend(children.values())
    return found


def markdown_texts(at) -> list[tuple[str, str]]:
    """(element type, Markdown source) of every element and label that the browser renders as Markdown."""
    texts = []
    for node in nodes(at):
        kind = type(node).__name__
        for attr in ("value", "label", "help", "placeholder"):
            value = getattr(node, attr, None)
            if attr == "value" and kind in NOT_MARKDOWN:
                continue
            if isinstance(value, str) and value:
                texts.append((f"{kind}.{attr}", value))
    return texts


def unsafe(source: str) -> list[str]:
    """What in one Markdown source would not show as text: links, images, raw HTML, autolinks, math, directives."""
    if not any(m in source for m in MARKERS):
        return []
    html = RENDER.render(source)
    problems = [tag for tag in ("<a ", "<img", "<script") if tag in html]
    if re.search(r"(?<!\\)<img|(?<!\\)<a ", source):
        problems.append("raw HTML")
    # GFM finds autolinks in the text after parsing, backslashes gone: http://, www. and name@host must be broken
    if re.search(r"(?i)(?<![a-z])(https?|ftp|mailto):|(?<![a-z])www\.|\w@\w", source.replace("\\", "")):
        problems.append("an autolink")
    if re.search(r"(?<!\\)\$x|(?<!\\):red\[", source):
        problems.append("LaTeX or a directive")
    return problems


def assert_text_only(at, where: str) -> None:
    assert not at.exception, at.exception
    for kind, source in markdown_texts(at):
        assert not unsafe(source), f"{where}: {kind} renders {unsafe(source)}: {source[:300]!r}"


def test_the_checker_catches_what_it_should():
    """The check above fails on the raw text and passes on the escaped one (so a pass means something)."""
    assert unsafe(rendered(UNKNOWN, symbols=HOSTILE))
    assert not unsafe(rendered(UNKNOWN, symbols=esc(HOSTILE)))
    assert "<img" in RENDER.render(IMAGE) and "<img" not in RENDER.render(esc(IMAGE))
    shown = RENDER.render(esc(HOSTILE)).replace("\u200b", "")  # the zero-width spaces inside would-be autolinks
    assert shown.count("evil.example") == 3 and "http://evil.example/phish" in shown  # every character still there


def test_control_characters_are_shown_as_their_pictures():
    """A browser draws most control characters as nothing: a random model's continuation holding byte 0x19, or a
    pasted terminal line's escape, would read as if it were not there. esc draws each as Unicode's picture of it;
    tabs and line breaks stay what they are."""
    shown = RENDER.render(esc("a\x00b\x19c\x1bd\x7fe\tf\ng"))
    assert "a\u2400b\u2419c\u241bd\u2421e\tf" in shown and "<br />\ng" in shown
    assert not any(ord(ch) < 32 and ch not in "\t\n" or ord(ch) == 0x7F for ch in shown)


def test_messages_escape_their_values_not_their_templates():
    message = M_("**{what}** not in the vocabulary: {symbols}", what="input", symbols=join_messages(", ", [LINK]))
    shown = md(message)
    assert shown.startswith("**input**") and "<a " not in RENDER.render(shown)
    assert "[evil]" in RENDER.render(shown)  # the visitor's text is shown, as text
    with language_scope("zh"):
        assert md(M_("Format: {title}. {notes}", title=IMAGE, notes="")).count("\\!") == 1
    assert "<code>" in RENDER.render(code("a ``b` c")) and "a ``b` c" in RENDER.render(code("a ``b` c"))


@pytest.mark.parametrize("page", list(PAGES))
@pytest.mark.parametrize("model", ["demo:translate", "demo:reverse"])
def test_a_link_with_markdown_shows_it_as_text_on_every_page(page, model):
    at = open_page(page, model=model, text=HOSTILE, target=HOSTILE)
    assert at.sidebar.text_area(key="text").value == HOSTILE  # nothing typed is lost
    quoted = [s for _, s in markdown_texts(at) if any(m in s for m in MARKERS)]
    if model == "demo:translate" and page == "attention":
        assert quoted, "the unknown words are quoted in a warning"
    assert_text_only(at, f"{page} with {model}")


def test_the_compare_page_quotes_model_b_safely():
    at = open_page("compare", model="demo:reverse", text=HOSTILE, target=HOSTILE, model_b="demo:translate")
    assert_text_only(at, "compare")
    assert any("Model B" in s and "evil" in s for _, s in markdown_texts(at)), "model B's warning quotes the words"
