"""The page's look for a room: a compact header always, and a presentation mode for projectors.

Compact header: a smaller title and less padding above it, so that at 1366x768 the first chart starts
within about 250 px of the top. Presentation mode (a sidebar toggle, in the URL as present=1): the
sidebar collapses, text is larger, charts get a screen's height each (`chart_box`), and a badge at the top
right names the model and its positions on every page, so the room knows which model it is looking at.
"""

from __future__ import annotations

import html
import re

import streamlit as st

from i18n import _, language
from ui.views.positional_names import KINDS  # the kinds' titles, as the positional page shows them
from viz.tokens import DEFAULT_HEIGHT_PX

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
[data-testid="stCaptionContainer"] { color: #4a4c57; opacity: 1; }
[data-testid="stMainBlockContainer"] .katex { font-size: 1.6em; }
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
# Charts grow with the window (presentation mode). A figure's size in px is chosen on the server for a 1366x768
# projector (`chart_box`), which does not know the window; `show` sends that size in the figure's meta (width 0: a
# chart as wide as its place) and lets the chart follow its box, and this script sizes the boxes in the browser. In
# a window no taller than 800 px (a 1366x768 projector) every chart keeps its own size. In a taller one every chart
# grows: one that stands alone (not inside columns) to 72% of the content's width (at most 2.5 times its own), and
# its height as much or as the window's height over 768 px, whichever is more; one in columns as the window's height,
# within its column. No chart grows taller than the window, and the page's first chart no further than the bottom of
# the first screen. Plotly lays the figure out again in the larger box: a heatmap's cells stay square (its axes are
# tied), text keeps its size. It runs again when the page or the window changes.
SCALE_JS = r"""
<div id="viz-present" hidden></div>
<script>
(() => {
  if (window.__vizScale) { window.__vizScale(); return; }
  const WIDTH_SHARE = 0.72, MAX_SCALE = 2.5, SMALL_SCREEN = 800, PROJECTOR_H = 768;
  const size = (box, w, h) => {  // the chart's box and Streamlit's frames around it up to its element's container
    const W = `${Math.round(w)}px`, H = `${Math.round(h)}px`;
    const holder = box.closest('[data-testid="stElementContainer"]');
    for (let el = box; el; el = el === holder ? null : el.parentElement) {
      if (el.style.getPropertyValue('width') !== W) el.style.setProperty('width', W, 'important');
      if (el.style.getPropertyValue('height') !== H) el.style.setProperty('height', H, 'important');
      el.setAttribute('data-viz-sized', '');
    }
    if (holder && holder.style.getPropertyValue('flex-basis') !== H) {  // Streamlit sets it to the figure's height
      holder.style.setProperty('flex-basis', H, 'important');
    }
  };
  const apply = () => {
    if (!document.getElementById('viz-present')) {  // presentation mode switched off: the boxes as Streamlit sizes them
      document.querySelectorAll('[data-viz-sized]').forEach(el => {
        ['width', 'height', 'flex-basis'].forEach(name => el.style.removeProperty(name));
        el.removeAttribute('data-viz-sized');
      });
      return;
    }
    const main = document.querySelector('[data-testid="stMainBlockContainer"]');
    if (!main) return;
    const boxes = [...main.querySelectorAll('[data-testid="stPlotlyChart"]')].filter(b => {
      const p = b.querySelector('.js-plotly-plot');
      return p && p.layout && p.layout.meta && p.layout.meta.vizSize;
    });
    const style = getComputedStyle(main);
    const contentW = main.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const scroller = document.querySelector('[data-testid="stMain"]');
    const H = window.innerHeight;
    const first = [...main.querySelectorAll('[data-testid="stPlotlyChart"]')]
        .find(b => b.getBoundingClientRect().height > 0);
    const grow = H > SMALL_SCREEN ? H / PROJECTOR_H : 1;  // a taller window: taller charts
    for (const box of boxes) {
      const [w, h] = box.querySelector('.js-plotly-plot').layout.meta.vizSize;
      const place = (box.closest('[data-testid="stElementContainer"]') || box).parentElement;
      const room = place ? place.clientWidth : contentW;
      const alone = !box.closest('[data-testid="stColumn"]');
      const s = grow > 1 && alone && w ? Math.max(1, Math.min(WIDTH_SHARE * contentW / w, MAX_SCALE)) : 1;
      let W2 = w ? w * s : room, H2 = h * Math.max(s, grow);
      const top = box.getBoundingClientRect().top + (scroller ? scroller.scrollTop : 0) + window.scrollY;
      H2 = Math.max(h, Math.min(H2, box === first ? H - top - 16 : H - 40));  // the first still whole on the first screen
      size(box, Math.min(W2, room), H2);  // never wider than its place
    }
    // the window these boxes were sized for (a test waits for it after changing the window's size)
    document.getElementById('viz-present').dataset.sizedFor = `${window.innerWidth}x${H}`;
    main.querySelectorAll('.js-plotly-plot').forEach(plot => {  // every chart, sized here or by its column
      if (!plot.__vizHug && plot.on) { plot.__vizHug = true; plot.on('plotly_afterplot', () => hug(plot)); hug(plot); }
    });
  };
  // A map with square cells in a box grown wider than the cells allow keeps to its left (constrain 'domain'): its
  // colour bar, placed at the box's right edge, would stand far from it. Drawn again beside the map's right edge.
  const hug = plot => {
    const full = plot._fullLayout;
    if (!window.Plotly || !full || !full.xaxis || full.xaxis.constrain !== 'domain' || !(full._size.w > 0)) return;
    const right = Math.max(...Object.keys(full).filter(k => /^xaxis\d*$/.test(k)).map(k => full[k].domain[1]));
    const target = Math.min(1.02, right + 24 / full._size.w);  // beside the rightmost map
    // the figure's own place (at the box's edge) or where this script put it at an earlier size, and not there yet
    const far = bar => bar && (bar.x >= 1 || bar.x === plot.__vizHugX) && Math.abs(bar.x - target) > 0.002;
    const axes = Object.keys(full).filter(k => /^coloraxis\d*$/.test(k) && full[k].showscale && far(full[k].colorbar));
    const own = (plot._fullData || []).map((t, i) => t.showscale && far(t.colorbar) ? i : -1).filter(i => i >= 0);
    const marks = (plot._fullData || []).map((t, i) => t.marker && t.marker.showscale && far(t.marker.colorbar)
                                                       ? i : -1).filter(i => i >= 0);
    if (!axes.length && !own.length && !marks.length) return;
    plot.__vizHugX = target;
    if (axes.length) Plotly.relayout(plot, Object.fromEntries(axes.map(k => [`${k}.colorbar.x`, target])));
    if (own.length) Plotly.restyle(plot, {'colorbar.x': target}, own);  // a heatmap's own colour bar
    if (marks.length) Plotly.restyle(plot, {'marker.colorbar.x': target}, marks);  // a scatter's markers' bar
  };
  let pending = false;
  const soon = () => { if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; apply(); }); } };
  window.__vizScale = soon;
  new MutationObserver(soon).observe(document.body, {childList: true, subtree: true});
  window.addEventListener('resize', soon);
  soon();
})();
</script>
"""
# Chinese y-axis titles: plotly turns them a quarter round (each character lying on its side); written top to bottom
# instead, characters upright (the CSS transform overrides the SVG rotation; Latin letters in them still turn).
# Every character upright (text-orientation): digits and letters turned sideways in a column were drawn out of
# place or not at all ("分数（距离 0 时为 1）" read "分数 距离 时为 ）"); parentheses, which have no upright form in a
# column, are written as " · " by `upright_title` (the titles are the page's, in Chinese, never a visitor's text).
UPRIGHT_CJK_CSS = """
<style>
.js-plotly-plot .ytitle, .js-plotly-plot .g-ytitle text {
  transform: none; writing-mode: vertical-rl; text-orientation: upright; }
</style>
"""
_PARENTHESES = re.compile(r"\s*（\s*([^（）]*?)\s*）")  # full-width only: ASCII ones belong to formulas, PE(p)


def upright_title(text: str) -> str:
    """A y-axis title as it is drawn in a column: "分数（距离 0 时为 1）" -> "分数 · 距离 0 时为 1"."""
    return _PARENTHESES.sub(lambda m: " · " + m.group(1) if m.group(1) else "", text).strip()


def _upright_y_titles(fig) -> None:
    """In Chinese, every y-axis title of the figure in the form `upright_title` gives (see UPRIGHT_CJK_CSS)."""
    for name, axis in fig.layout.to_plotly_json().items():
        text = name.startswith("yaxis") and ((axis.get("title") or {}).get("text") or "")
        if text and upright_title(text) != text:
            fig.layout[name].title.text = upright_title(text)


# (max height, max width) in px of one chart's plot: beside the open sidebar at 1366x768 under a compact
# header; in presentation mode, with the sidebar collapsed, nearly a screen each.
NORMAL_BOX, PRESENT_BOX = (520, 860), (470, 1180)
NORMAL_TEXT_PX, PRESENT_TEXT_PX = 14, 18  # tick labels, legends and axis titles of charts


def _changed() -> None:
    st.session_state["_present_changed"] = True


def model_badge(label: str, positional: str) -> str:
    """The badge's HTML: the model's name (escaped: an upload's file name is a visitor's text) and its kind of
    positions, in the page's language."""

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
    css = COMPACT_CSS + (PRESENT_CSS if present else "") + (UPRIGHT_CJK_CSS if language() == "zh" else "") + badge
    st.html(css + SCALE_JS if present else css, unsafe_allow_javascript=present)
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
DEFAULT_CHART_PX = DEFAULT_HEIGHT_PX  # plotly's height for a figure that names none (viz.tokens)


MIN_CHART_PX = 240  # less room than this below a page's header: the chart gets a screen of its own instead


def fit_height(fig, top_px: int | None = None) -> None:
    """In presentation mode, make a figure no taller than the screen, or (top_px: where the page's first chart
    starts at 1366x768, measured) than what is left below the page's header, unless that is less than MIN_CHART_PX
    (messages above the chart took the screen: a chart squeezed into the rest would show nothing); elsewhere leave
    it as it is."""
    if not presenting():
        return
    cap = SCREEN_PX - 24 - (top_px or 0)  # 24: room for the chart's toolbar and the window's edge
    if cap < MIN_CHART_PX:
        cap = SCREEN_PX - 24
    height = fig.layout.height or DEFAULT_CHART_PX
    if height > cap:
        fig.layout.height = cap


def show(fig, key: str, where=None, top_px: int | None = None, **kwargs):
    """st.plotly_chart for every chart of the app: dark text of the mode's size on every axis, legend and colour
    bar (readable), and in presentation mode no taller than the screen (fit_height); under it the chart's download
    as a file for a paper or a slide (ui/shell/figure_download.py). where: a column or container (default: the page);
    other keyword arguments go to plotly_chart."""
    from ui.shell.figure_download import download_control
    from viz.tokens import ensure_readable, thin_row_labels

    ensure_readable(fig, chart_text_px())
    width = fig.layout.width  # the figure's own, before presentation mode hands the width to the browser
    if language() == "zh":
        _upright_y_titles(fig)
    fit_height(fig, top_px)
    thin_row_labels(fig, chart_text_px())  # rows closer than their labels (a height cap, larger text): fewer labels
    if presenting() and kwargs.get("width", "stretch") == "stretch":
        # sized in the browser (SCALE_JS): its size at a projector's 1366x768 (width 0: as wide as its place) travels
        # in the layout's meta, and the chart follows its box, which the script sizes (larger in a larger window)
        size = [fig.layout.width or 0, fig.layout.height or DEFAULT_CHART_PX]
        fig.layout.meta = {**(fig.layout.meta or {}), "vizSize": size}
        fig.layout.width = None
        kwargs["width"] = "stretch"
    elif fig.layout.width:  # a figure that says how wide it is (snug: its colour bar beside the map) is shown so
        kwargs.setdefault("width", "content")
    chart = (where or st).plotly_chart(fig, key=key, **kwargs)
    download_control(fig, key, where, width)  # SVG, PDF or PNG of this chart, drawn when asked
    return chart
