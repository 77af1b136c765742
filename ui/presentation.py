"""The page's look for a room: a compact header always, and a presentation mode for projectors.

Compact header: a smaller title and less padding above it, so that at 1366x768 the first chart starts
within about 250 px of the top. Presentation mode (a sidebar toggle, in the URL as present=1): the
sidebar collapses, text is larger, charts get a screen's height each (`chart_box`), and a badge at the top
right names the model and its positions on every page, so the room knows which model it is looking at.
"""

from __future__ import annotations

import html

import streamlit as st

from i18n import _, language

# Streamlit's defaults: 6rem of padding above the content, a 2.75rem title. Text colour stays the theme's.
COMPACT_CSS = """
<style>
[data-testid="stMainBlockContainer"] { padding-top: 2.6rem; padding-bottom: 2rem; }
[data-testid="stMainBlockContainer"] h1 { font-size: 1.6rem; padding: 0 0 0.25rem 0; }
[data-testid="stMainBlockContainer"] [data-testid="stVerticalBlock"] { gap: 0.6rem; }
[data-testid="stSidebarUserContent"] { padding-top: 0.5rem; }
</style>
"""
# In presentation mode the title shares the first line with the sidebar's arrow (the header bar, transparent, lets
# it through): the first chart starts about 60 px higher on a 768 px screen.
PRESENT_CSS = """
<style>
html { font-size: 19px; }
[data-testid="stMainBlockContainer"] { max-width: 100%; padding: 1rem 2rem 2rem 2rem; }
[data-testid="stMainBlockContainer"] h1 { padding-left: 2.2rem; }
[data-testid="stHeader"] { background: transparent; pointer-events: none; }
[data-testid="stHeader"] button, [data-testid="stHeader"] a { pointer-events: auto; }
[data-testid="stMainBlockContainer"] p, [data-testid="stMainBlockContainer"] li,
[data-testid="stMainBlockContainer"] label { font-size: 1.1rem; }
[data-testid="stMainBlockContainer"] [data-testid="stVerticalBlock"] { gap: 0.5rem; }
</style>
"""
# The model's badge: fixed at the top right, beside Streamlit's menu, above the (transparent) header bar; it takes
# no room from the page, so the first chart stays where it was. Dark text on the theme's light grey.
BADGE_CSS = """
<style>
#viz-model-badge { position: fixed; top: 0.55rem; right: 3.6rem; z-index: 1000001; pointer-events: none;
  background: #f0f2f6; color: #31333f; border-radius: 0.5rem; padding: 0.15rem 0.7rem; font-size: 1rem;
  line-height: 1.5; white-space: nowrap; max-width: 45vw; overflow: hidden; text-overflow: ellipsis; }
#viz-model-badge b { font-weight: 600; }
</style>
"""
# Chinese y-axis titles: plotly turns them a quarter round (each character lying on its side); written top to bottom
# instead, characters upright (the CSS transform overrides the SVG rotation; Latin letters in them still turn).
UPRIGHT_CJK_CSS = """
<style>
.js-plotly-plot .ytitle, .js-plotly-plot .g-ytitle text { transform: none; writing-mode: vertical-rl; }
</style>
"""
# (max height, max width) in px of one chart's plot: beside the open sidebar at 1366x768 under a compact
# header; in presentation mode, with the sidebar collapsed, nearly a screen each.
NORMAL_BOX, PRESENT_BOX = (520, 860), (470, 1180)
NORMAL_TEXT_PX, PRESENT_TEXT_PX = 14, 18  # tick labels, legends and axis titles of charts


def _changed() -> None:
    st.session_state["_present_changed"] = True


def model_badge(label: str, positional: str) -> str:
    """The badge's HTML: the model's name (escaped: an upload's file name is a visitor's text) and its kind of
    positions, in the page's language."""
    from ui.positional_models import KINDS  # the kinds' titles, as the positional page shows them

    kind = _(KINDS[positional]) if positional in KINDS else positional
    text = _("{model} · positions: {kind}").format(model=f"<b>{html.escape(label)}</b>", kind=html.escape(kind))
    return f'{BADGE_CSS}<div id="viz-model-badge" role="status">{text}</div>'


def presentation_mode(session=None) -> bool:
    """The sidebar's presentation toggle (kept in the URL) and the page's CSS; True in presentation mode.
    session: the sidebar's Session (None when no model loaded); in presentation mode its model gets a badge."""
    first = "present" not in st.session_state
    if first:
        st.session_state["present"] = st.query_params.get("present", "") in ("1", "true", "yes")
    present = bool(st.session_state["present"])
    if (first and present) or st.session_state.pop("_present_changed", False):
        # The sidebar collapses when the mode is switched on (or a link opens in it); its arrow brings it back.
        st.set_page_config(initial_sidebar_state="collapsed" if present else "expanded")
    st.sidebar.toggle(
        _("Presentation mode"),
        key="present",
        on_change=_changed,
        help=_(
            "For a projector: hides this sidebar (its arrow at the top left brings it back), larger "
            "text, one chart per screen. Kept in the link (present=1)."
        ),
    )
    if present:
        st.query_params["present"] = "1"
    else:
        st.query_params.pop("present", None)
    badge = model_badge(session.label, session.model.config.positional) if present and session is not None else ""
    st.html(COMPACT_CSS + (PRESENT_CSS if present else "") + (UPRIGHT_CJK_CSS if language() == "zh" else "") + badge)
    return present


def presenting() -> bool:
    """True in presentation mode (the sidebar's toggle)."""
    return bool(st.session_state.get("present"))


def chart_box() -> tuple[int, int]:
    """(max height, max width) in px for one chart, for the current mode."""
    return PRESENT_BOX if presenting() else NORMAL_BOX


def chart_text_px() -> int:
    """The size in px of charts' tick labels and legends, for the current mode."""
    return PRESENT_TEXT_PX if presenting() else NORMAL_TEXT_PX


SCREEN_PX = 768  # a projector's height: in presentation mode no chart is taller, and a page's first chart ends inside
DEFAULT_CHART_PX = 450  # plotly's height for a figure that names none


def fit_height(fig, top_px: int | None = None) -> None:
    """In presentation mode, make a figure no taller than the screen, or (top_px: where the page's first chart
    starts at 1366x768, measured) than what is left below the page's header; elsewhere leave it as it is."""
    if not presenting():
        return
    cap = SCREEN_PX - 24 - (top_px or 0)  # 24: room for the chart's toolbar and the window's edge
    height = fig.layout.height or DEFAULT_CHART_PX
    if height > cap:
        fig.layout.height = cap


def show(fig, key: str, where=None, top_px: int | None = None, **kwargs):
    """st.plotly_chart for every chart of the app: dark text of the mode's size on every axis, legend and colour
    bar (readable), and in presentation mode no taller than the screen (fit_height). where: a column or container
    (default: the page); other keyword arguments go to plotly_chart."""
    from viz.tokens import ensure_readable

    ensure_readable(fig, chart_text_px())
    fit_height(fig, top_px)
    if fig.layout.width:  # a figure that says how wide it is (snug: its colour bar beside the map) is shown so
        kwargs.setdefault("width", "content")
    return (where or st).plotly_chart(fig, key=key, **kwargs)
