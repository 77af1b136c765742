"""The app's pages (pages/ holds their scripts, and nothing else) and how a page run reaches the shared sidebar.

PAGES is the one list of pages: st.navigation's menu, the tests' and benchmarks' page lists all come from it.
A new page is its script in pages/ plus one line here.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping
from pathlib import Path

import streamlit as st

from i18n import N_, _

PAGES_DIR = Path(__file__).resolve().parents[2] / "pages"
# url_path -> (file, title, icon); the first is the default page. Titles are marked (N_) and translated in page_list.
PAGES = {
    "attention": ("attention.py", N_("Attention"), ":material/grid_on:"),
    "inside": ("inside.py", N_("Inside attention"), ":material/calculate:"),
    "positional": ("positional.py", N_("Positional encoding"), ":material/waves:"),
    "decoding": ("decoding.py", N_("Step-by-step decoding"), ":material/skip_next:"),
    "attribution": ("attribution.py", N_("Attribution"), ":material/troubleshoot:"),
    "compare": ("compare.py", N_("Compare two models"), ":material/compare:"),
    "training": ("training.py", N_("Training"), ":material/timeline:"),
    "head_atlas": ("head_atlas.py", N_("Head atlas"), ":material/apps:"),
    "model": ("model.py", N_("Model"), ":material/account_tree:"),
    "lecture_pack": ("lecture_pack.py", N_("Lecture pack"), ":material/school:"),
}

# url_path -> what a run of that page may cost before it starts (model/analysis/budget.py): the sidebar cuts the
# input to the room this leaves. A page not named here counts page_bytes (capture with Q, K, V, every map's figure).
# Named, not imported: this module stays light (the budget module imports torch).
COSTS = {"attention": "attention_page_bytes", "compare": "compare_page_bytes"}


def page_cost(page, default: str = "attention") -> Callable | None:
    """The cost function of st.navigation's chosen page: by its url_path (the hidden "-home" form too), and for the
    page at the root URL, whose url_path Streamlit reads as "", by the name of the `default` page it serves."""
    path = str(getattr(page, "url_path", "") or "") or default
    name = COSTS.get(path.removesuffix("-home"))
    if name is None:
        return None
    from model.analysis import budget

    return getattr(budget, name)


THROUGH_APP = contextvars.ContextVar("page_runs_through_app", default=False)  # set by run_app around page.run()


def page_list(default: str = "attention", icons: bool = True) -> list:
    """The pages for st.navigation. The default page is served at the root URL, which Streamlit gives it instead
    of its name; the same script is also registered under its name, hidden from the menu, so that a typed or
    shared /attention opens that page rather than a "Page not found" dialog."""
    pages = []
    for name, (file, title, icon) in PAGES.items():
        title = _(title)
        shown = icon if icons else None
        if name == default:
            pages.append(st.Page(PAGES_DIR / file, title=title, icon=shown, url_path=f"{name}-home", default=True))
            pages.append(st.Page(PAGES_DIR / file, title=title, icon=shown, url_path=name, visibility="hidden"))
        else:
            pages.append(st.Page(PAGES_DIR / file, title=title, icon=shown, url_path=name))
    return pages


def rerun_through_app() -> None:
    """A page file ran on its own, without app.py (so without sidebar and model): run it again through app.py.

    To Streamlit (1.67 still), a folder named pages/ beside app.py is an old-style multipage app until
    st.navigation is first called in the process (PagesManager.uses_pages_directory). Until then a link straight
    to a page (/positional) runs that file alone: as the first visit after a start, and for every later visit to
    a page until someone opens the app's root. Calling st.navigation switches Streamlit to app.py's pages for
    good; the rerun then goes through app.py to the same page. Tried once per session, so a page file run alone
    on purpose still runs. (Moving the helpers out of pages/ removed their phantom pages, /common and the like,
    but not this: it depends on the folder's name only.)
    """
    if st.session_state.get("_rerun_through_app"):
        return
    st.session_state["_rerun_through_app"] = True
    st.navigation(page_list(icons=False), position="hidden")  # no icons: a page's icon became a favicon fetched online
    st.rerun()


def view_menu(views: Mapping[str, str], key: str, label: str = N_("View"), container=st) -> None:
    """A page's menu of views (or of a few exclusive settings): one segmented control, in `container`, of `views`'
    keys named by their marked values, one always chosen, its label (marked) hidden; its value in
    st.session_state[key], the link's key."""
    container.segmented_control(
        _(label),
        list(views),
        key=key,
        format_func=lambda v: _(views[v]),
        required=True,
        label_visibility="collapsed",
    )
