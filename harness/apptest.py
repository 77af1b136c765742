"""Running app pages headless with streamlit.testing.v1.AppTest, against a small checkpoint."""

from __future__ import annotations

import functools
import html
import json
import os
import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["attention", "positional", "decoding", "model"]
# A page run's time limit. Runs are waited for, so a generous limit costs nothing on an idle machine and keeps
# the suite green on a shared CI machine with other work on it; APPTEST_TIMEOUT_S overrides it.
TIMEOUT_S = float(os.environ.get("APPTEST_TIMEOUT_S", 180))
TITLES = {
    "attention": "Attention",
    "positional": "Positional encoding",
    "decoding": "Step-by-step decoding",
    "model": "Model",
}


def app_script(page: str) -> str:
    """app_script.py (what app.py serves) with another default page: AppTest's switch_page drops the entry point's
    sidebar."""
    source = (ROOT / "app_script.py").read_text()
    assert "run_app()" in source and "import streamlit as st\n" in source
    source = source.replace(
        "import streamlit as st\n", f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nimport streamlit as st\n", 1
    )
    return source.replace("run_app()", f"run_app(default={page!r})")


@functools.cache
def component_manager():
    """One registry of installed Streamlit components for every AppTest of the process, as a server has one per
    process: each new AppTest otherwise scans every installed distribution's metadata for component manifests on its
    first run (about 0.8 s on two busy cores, most of a small page's run)."""
    from streamlit.components.v2.component_manager import BidiComponentManager

    manager = BidiComponentManager()
    manager.discover_and_register_components(start_file_watching=False)
    return manager


def new_app(script: str, timeout: float = TIMEOUT_S) -> AppTest:
    """AppTest.from_string(script) sharing the process's component registry (`component_manager`)."""
    at = AppTest.from_string(script, default_timeout=timeout)
    if getattr(at, "_bidi_component_manager", False) is None:  # Streamlit's attribute; another version scans as before
        at._bidi_component_manager = component_manager()
    return at


def open_page(page: str, model: str | None = None, timeout: float = TIMEOUT_S, **params: str) -> AppTest:
    """Open the app on `page` (a key of PAGES) with URL parameters; returns the AppTest after the first run."""
    at = new_app(app_script(page), timeout)
    if model is not None:
        at.query_params["model"] = model
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def charts(at: AppTest) -> list[dict]:
    """Every plotly chart on the page as its figure JSON."""
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def chart_titles(at: AppTest) -> list[str]:
    return [c["layout"].get("title", {}).get("text", "") for c in charts(at)]


def shown(markdown: str) -> str:
    """What a reader sees of a Markdown element: rendered as CommonMark (as Streamlit's frontend does), tags dropped,
    entities read; escapes such as \\( or `code` delimiters are gone, the characters themselves stay."""
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark", {"html": False}).render(markdown)  # raw HTML shows as text, as in Streamlit
    return html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip()


def messages(at: AppTest) -> str:
    return " ".join(shown(e.value) for e in [*at.error, *at.warning, *at.info])
