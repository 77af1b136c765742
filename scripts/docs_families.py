"""The documentation's table of the Llama-like families, made from the format registry when the site is built.

A page holds the marker `<!-- families-table -->` where the table goes (docs/families.md, docs/zh/families.md);
mkdocs runs this module as a hook (mkdocs.yml `hooks:`) and puts in its place one row per format module with a
`FAMILY` table, in the registry's order: its NAME, its TITLE (translated for a page under docs/zh/), its config.json
model types and, in English, the first paragraph of its module docstring. So a new family is in the docs, in both
languages, with nothing written there by hand; the pages' text as the site shows it is `expand(text, lang)`.

    python scripts/docs_families.py [en|zh]    # prints the table
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # mkdocs loads hooks by path
    sys.path.insert(0, str(ROOT))

MARKER = "<!-- families-table -->"
HEADERS = {
    "en": ("format", "title", "config.json `model_type`", "reads"),
    "zh": ("格式", "标题", "config.json 的 `model_type`"),
}


def families() -> list:
    """The format modules with a FAMILY table (hf_decoder.py's families), in the registry's order."""
    from model.checkpoints.formats import REGISTRY

    return [fmt for fmt in REGISTRY if hasattr(fmt, "FAMILY")]


def summary(fmt) -> str:
    """The first paragraph of a format module's docstring, on one line."""
    doc = (fmt.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(doc.split())


def cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(lang: str = "en") -> str:
    """The families' Markdown table in `lang` ("en" or "zh")."""
    from i18n import _, language_scope

    headers = HEADERS[lang]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    with language_scope(lang):
        for fmt in families():
            types = ", ".join(f"`{kind}` ({name})" for kind, name in fmt.MODEL_TYPES.items())
            row = [f"`{fmt.NAME}`", _(fmt.TITLE), types] + ([summary(fmt)] if lang == "en" else [])
            lines.append("| " + " | ".join(cell(c) for c in row) + " |")
    return "\n".join(lines)


def language(src_uri: str) -> str:
    """A page's language from its place in docs/ (the Chinese pages live under zh/)."""
    return "zh" if src_uri.replace("\\", "/").startswith("zh/") else "en"


def expand(text: str, lang: str) -> str:
    """A page's Markdown as the site shows it: the marker replaced by the table."""
    return text.replace(MARKER, table(lang)) if MARKER in text else text


def on_page_markdown(markdown: str, page, **kwargs) -> str:
    """mkdocs hook: the table in place of the marker."""
    return expand(markdown, language(page.file.src_uri))


if __name__ == "__main__":
    print(table(sys.argv[1] if len(sys.argv) > 1 else "en"))
