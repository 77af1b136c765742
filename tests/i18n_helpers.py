"""What a person sees in an AppTest run, as strings, and whether each is in Chinese (issue 16).

`visible_strings(at)` lists (where, text) for the navigation, titles, headers, markdown, captions, alerts,
widget labels, help texts, options and placeholders, expanders, tabs, buttons, metrics, table headers and
the plotly charts' titles, axis titles, legend entries, annotations, colour bar titles and hover templates.
`untranslated(strings)` keeps those with English words and no Chinese that the allow-list does not cover:
tokens, formulas, numbers, model and file names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from streamlit.testing.v1 import AppTest

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
