"""What a hall sees of one view in presentation mode, measured in the browser: where the first chart ends, how much
of the content's width it takes, the captions' contrast and the labels cut short. Shared by the hall test
(tests/test_e2e_presentation.py) and the sweep over pages, model shapes, screens and languages
(benchmarks/bench_hall.py)."""

from __future__ import annotations

import re

from harness.charts import contrast_on_white

SCREENS = [{"width": 1366, "height": 768}, {"width": 1920, "height": 1080}]  # a projector and a large screen
CAPTION_CONTRAST = 4.5  # WCAG AA for text: captions carry the model's output ("model predicts: ...")
WIDTH_SHARE = 0.6  # a chart that stands alone (not one of several side by side) at 1920 px: at least this share

# Every view of every page: (page, URL parameters). A view that does not apply to a shape says so in one line.
VIEWS = [
    ("attention", {"att_view": "one"}),
    ("attention", {"att_view": "grid"}),
    ("attention", {"att_view": "overview"}),
    ("attention", {"att_view": "sinks"}),
    ("attention", {"att_view": "bertviz"}),
    ("attention", {"att_view": "bertviz", "att_bertviz": "model view"}),
    ("inside", {}),
    *[("positional", {"pe_view": v}) for v in ("matrix", "curves", "offsets", "similarity", "shift", "mine")],
    ("positional", {"pe_view": "infer", "pe_pos": "off"}),
    ("positional", {"pe_view": "rope", "model": "demo:reverse_rope"}),
    ("positional", {"pe_view": "models"}),
    ("positional", {"pe_view": "length"}),
    *[("decoding", {"dec_strategy": s}) for s in ("greedy", "beam", "sample")],
    ("attribution", {}),
    ("compare", {}),
    ("head_atlas", {}),
    ("training", {}),
    ("training", {"model": "demo:translate"}),  # a demo with training snapshots
    *[("model", {"model_view": v}) for v in ("config", "params", "weights", "shapes")],
    ("lecture_pack", {}),
]
SAME_FOR_EVERY_MODEL = ("matrix", "curves", "offsets", "similarity", "shift")  # pe_view: the paper's sinusoids alone

# JavaScript: after the window changed its size, the page and every chart are laid out again for it.
SETTLED = """w => {
    if (window.innerWidth !== w) return false;
    const mark = document.getElementById('viz-present');  // presentation mode: its script sized the boxes for it
    if (mark && mark.dataset.sizedFor !== `${window.innerWidth}x${window.innerHeight}`) return false;
    const p = [...document.querySelectorAll('.js-plotly-plot')].find(p => p.getBoundingClientRect().width > 0);
    return !p || (p._fullLayout && Math.abs(p._fullLayout.width - p.getBoundingClientRect().width) < 4);
}"""

# JavaScript: the content's width, the first chart drawn (its box, whether it stands in columns), every caption's
# colour and opacity, and every widget label drawn cut short (its text wider than its box: an ellipsis).
MEASURE = """() => {
    const main = document.querySelector('[data-testid="stMainBlockContainer"]');
    const style = getComputedStyle(main);
    const content = main.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const plot = [...document.querySelectorAll('.js-plotly-plot')].find(p => p.getBoundingClientRect().height > 0);
    const r = plot && plot.getBoundingClientRect();
    const labels = [...main.querySelectorAll('[data-testid="stWidgetLabel"], [data-testid="stWidgetLabel"] *, label, '
                                             + 'label *, [role="radio"], [role="radio"] *')];
    const cut = labels.filter(e => { const s = getComputedStyle(e);  // Streamlit's labels: an ellipsis when too long
        return (s.textOverflow === 'ellipsis' || s.overflow === 'hidden') && e.textContent.trim() && e.clientWidth > 0
               && e.scrollWidth > e.clientWidth + 1; }).map(e => e.textContent.trim().slice(0, 60));
    return {content,
            first: r ? {top: r.top, bottom: r.bottom, width: r.width,
                        inColumns: !!plot.closest('[data-testid="stColumn"]'),
                        title: (plot.querySelector('.gtitle') || {}).textContent || ''} : null,
            captions: [...main.querySelectorAll('[data-testid="stCaptionContainer"]')].map(c => {
                const s = getComputedStyle(c);
                return {text: c.textContent.slice(0, 30), color: s.color, opacity: parseFloat(s.opacity)}; }),
            cut: [...new Set(cut)]};
}"""


# JavaScript: the view is drawn and still: the script's run over, no element stale (a rerun's leftovers), presentation
# mode's script there, every chart drawn, and the same charts and captions at three polls in a row.
STILL = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    if (document.querySelector('[data-stale="true"], [data-testid="stSkeleton"], [data-testid="stSkeletonElement"]')
        || !document.getElementById('viz-present')) return false;  // stale, or a component still loading
    const boxes = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];  // plotly loads after its box
    const plots = boxes.map(b => b.querySelector('.js-plotly-plot'));
    if (!plots.every(p => p && p.querySelector('.main-svg') && p._fullLayout)) return false;
    const sign = [plots.length, document.querySelectorAll('[data-testid="stCaptionContainer"]').length,
                  document.querySelectorAll('[data-testid="stElementContainer"]').length].join();
    const w = window.__vizStill = window.__vizStill || {sign: '', n: 0};
    w.n = w.sign === sign ? w.n + 1 : 0; w.sign = sign;
    return w.n >= 2;
}"""


def wait_still(page, timeout_ms: float) -> None:
    """Wait until the view is drawn and no longer changes (STILL, polled every 250 ms)."""
    page.wait_for_function(STILL, timeout=timeout_ms, polling=250)


def drawn_contrast(color: str, opacity: float) -> float:
    """WCAG contrast on the white page of a text of CSS colour `color` ("rgb(r, g, b)") drawn at `opacity`."""
    rgb = [int(float(v)) for v in re.findall(r"[\d.]+", color)[:3]]
    return contrast_on_white("rgb({}, {}, {})".format(*(round(255 - opacity * (255 - v)) for v in rgb)))


def measure(page, screen: dict, timeout_ms: float) -> dict:
    """The view's measures at `screen` (the window already that size), once the page is laid out for it:
    `MEASURE`'s fields plus `contrast` (the lowest caption's, None without captions)."""
    page.wait_for_function(SETTLED, arg=screen["width"], timeout=timeout_ms)
    wait_still(page, timeout_ms)
    shown = page.evaluate(MEASURE)
    shown["contrast"] = min((drawn_contrast(c["color"], c["opacity"]) for c in shown["captions"]), default=None)
    return shown


def problems(shown: dict, screen: dict) -> list[str]:
    """What a hall would not see right: the first chart not whole on the first screen, a chart standing alone
    narrower than WIDTH_SHARE of the content at 1920 px, a caption under CAPTION_CONTRAST, a label cut short."""
    out, first = [], shown["first"]
    if first and not (first["top"] >= 0 and first["bottom"] <= screen["height"] + 1):  # sub-pixel rounding
        out.append(f"first chart spans {first['top']:.0f}-{first['bottom']:.0f} px")
    if first and screen["width"] >= 1920 and not first["inColumns"] and first["width"] < WIDTH_SHARE * shown["content"]:
        out.append(f"first chart {first['width']:.0f} px of {shown['content']:.0f}")
    if shown["contrast"] is not None and shown["contrast"] < CAPTION_CONTRAST:
        out.append(f"caption contrast {shown['contrast']:.1f}:1")
    out += [f"label cut: {text!r}" for text in shown["cut"]]
    return out
