"""What a person sees in an AppTest run, as strings, and whether each is in Chinese (issue 16).

`visible_strings(at)` lists (where, text) for the navigation, titles, headers, markdown, captions, alerts,
widget labels, help texts, options and placeholders, expanders, tabs, buttons, metrics, table headers and
the plotly charts' titles, axis titles, legend entries, annotations, colour bar titles and hover templates.
`untranslated(strings)` keeps those with English words and no Chinese that the allow-list does not cover:
tokens, formulas, numbers, model and file names.

What tests compare the code's words with: message ids, never a copied English sentence.
`msgid(template)` is `template`, checked to be a message of the catalog (i18n/messages.pot): compare a Message's
`.template` with it (`msgid_starting(start)`: the one message that starts so, for long ones). `rendered(template, **values)` is that message as a page shows it in the current language;
`matching(template, **values)` a regular expression for it (pytest.raises(match=...), a search in a page's text),
where a placeholder without a value matches any text. A test that uses them fails when the code says something
else, in any language; scripts/count_english_asserts.py counts the tests that still copy sentences.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from streamlit.testing.v1 import AppTest

from i18n import _

CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
LATIN_WORD = re.compile(r"[A-Za-z]{2,}")  # one letter alone is a symbol (p, k, i, T), not a word

# Text that is the same in every language: names, formulas and symbols, file and format names.
ALLOWED = {
    "bertviz",  # a library's name, the view's name
    "d_model",
    "max |w|",
    "post-LN",
    "pre-LN",
    "Language · 语言",
    "SVG",  # file formats (the figure download's choice)
    "PDF",
    "PNG",
}
ALLOWED_PATTERNS = [
    re.compile(r"\d+: .*"),  # "3: token": a position and its token (tokens are never translated)
    re.compile(r"[LH]\d+( H\d+)?"),  # L0 H1: layer and head of a row
    re.compile(r"p = \d+"),  # a starting position p
]


def has_cjk(text: str) -> bool:
    return bool(CJK.search(text))


def _plotly_strings(spec: dict) -> Iterable[tuple[str, str]]:
    layout = spec.get("layout", {})

    def text_of(title) -> str:
        return (title.get("text") if isinstance(title, dict) else title) or ""

    yield "chart title", text_of(layout.get("title"))
    for key, axis in layout.items():
        if re.fullmatch(r"[xy]axis\d*", key) and isinstance(axis, dict):
            yield f"chart {key} title", text_of(axis.get("title"))
        if key.startswith("coloraxis") and isinstance(axis, dict):
            yield "colour bar title", text_of(axis.get("colorbar", {}).get("title"))
    for note in layout.get("annotations", []):
        yield "chart annotation", note.get("text", "")
    for trace in spec.get("data", []):
        if trace.get("name") and trace.get("showlegend", True) is not False:
            yield "legend entry", trace["name"]
        if trace.get("hovertemplate"):
            yield "hover text", re.sub(r"%\{[^}]*\}|<br>|<extra></extra>", " ", trace["hovertemplate"])
        if isinstance(trace.get("colorbar"), dict):
            yield "colour bar title", text_of(trace["colorbar"].get("title"))


def _widget_strings(node) -> Iterable[tuple[str, str]]:
    kind = node.type
    proto = getattr(node, "proto", None)
    if getattr(node, "label", None):  # collapsed labels too: screen readers say them
        yield f"{kind} label", node.label
    if getattr(node, "help", None):
        yield f"{kind} help", node.help
    if getattr(proto, "placeholder", ""):
        yield f"{kind} placeholder", proto.placeholder
    if kind == "button_group":
        for option in proto.options:
            yield f"{kind} option", option.content
    elif kind in ("selectbox", "radio", "multiselect", "select_slider"):
        for option in node.options:
            yield f"{kind} option", str(option)


TEXT_ELEMENTS = {"title", "header", "subheader", "markdown", "caption", "text", "error", "warning", "info", "success"}
WIDGETS = {
    "button",
    "download_button",
    "button_group",
    "selectbox",
    "radio",
    "multiselect",
    "select_slider",
    "slider",
    "number_input",
    "text_input",
    "text_area",
    "toggle",
    "checkbox",
    "file_uploader",
}


def _walk(node) -> Iterable:
    yield node
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for child in children.values():
            yield from _walk(child)


def visible_strings(at: AppTest) -> list[tuple[str, str]]:
    """(where, text) for every string of the last run that a person can see (see the module docstring)."""
    found = [("navigation", info["page_name"]) for info in at._registered_pages.values()]  # st.navigation's titles
    for node in _walk(at._tree):
        kind = getattr(node, "type", "")
        if kind in TEXT_ELEMENTS:
            found.append((kind, str(node.value)))
        elif kind in ("expander", "tab"):
            found.append((kind, node.label))
        elif kind == "metric":
            found.append(("metric label", node.label))
        elif kind in WIDGETS:
            found.extend(_widget_strings(node))
        elif kind == "plotly_chart":
            found.extend(_plotly_strings(json.loads(node.proto.spec)))
        elif kind in ("dataframe", "arrow_data_frame"):
            found.extend(("table header", str(c)) for c in node.value.columns)
        elif kind == "progress":
            found.append(("progress text", node.proto.text))
    return [(where, text) for where, text in found if text and text.strip()]


def untranslated(strings: Iterable[tuple[str, str]], allowed: Iterable[str] = ()) -> list[tuple[str, str]]:
    """The strings with an English word and no Chinese character that the allow-list does not name."""
    allowed = ALLOWED | set(allowed)
    left = []
    for where, text in strings:
        if has_cjk(text) or not LATIN_WORD.search(text) or text in allowed:
            continue
        if any(p.fullmatch(text) for p in ALLOWED_PATTERNS):
            continue
        left.append((where, text))
    return left


POT = Path(__file__).resolve().parents[1] / "i18n" / "messages.pot"


@cache
def catalog_ids() -> frozenset[str]:
    """Every message id (and plural id) of the catalog's template, i18n/messages.pot."""
    from babel.messages.pofile import read_po

    with open(POT, "rb") as fh:
        catalog = read_po(fh)
    ids: set[str] = set()
    for message in catalog:
        ids.update(message.id if isinstance(message.id, tuple) else (message.id,))
    return frozenset(i for i in ids if i)


def msgid(template: str) -> str:
    """`template`, after checking that it is a message id of the catalog (AssertionError where the code no longer
    has that message)."""
    assert template in catalog_ids(), f"not a message id of i18n/messages.pot: {template!r}"
    return template


def msgid_starting(start: str) -> str:
    """The one message id of the catalog that starts with `start` (for long messages; AssertionError unless there is
    exactly one)."""
    found = sorted(i for i in catalog_ids() if i.startswith(start))
    assert len(found) == 1, f"{len(found)} message ids of i18n/messages.pot start with {start!r}: {found[:3]}"
    return found[0]


def rendered(template: str, **values: object) -> str:
    """The message `template` (a msgid) as shown in the current language, formatted with `values`."""
    return _(msgid(template)).format(**values)


def matching(template: str, **values: object) -> str:
    """A regular expression for the message `template` (a msgid) in the current language: each value given in
    place (as text), any other placeholder any text."""
    out = []
    for i, part in enumerate(re.split(r"\{(\w+)[^{}]*\}", _(msgid(template)))):  # text, name, text, name, ...
        if i % 2 == 0:
            out.append(re.escape(part))
        else:
            out.append(re.escape(str(values[part])) if part in values else ".*?")
    return "".join(out)
