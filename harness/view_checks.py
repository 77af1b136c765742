"""What a person sees of a view, read in the browser: a signature of the view for comparing two windows,
and the characters a font stack draws as empty boxes (Chinese)."""

from __future__ import annotations

from harness.browser import WAIT_S, Watch, _failure

# JavaScript: what a person sees of the view, for comparing two windows: chart titles and tick labels, the chosen
# option of every segmented control, radio, select box, multiselect and slider, and the page's markdown text.
_VIEW_SIGNATURE = """() => {
    const all = s => [...document.querySelectorAll(s)];
    const text = e => (e.innerText || e.textContent || '').trim();
    const main = document.querySelector('[data-testid="stMain"]') || document;
    const inMain = s => [...main.querySelectorAll(s)];
    return {
        charts: all('.js-plotly-plot').map(p => ({
            title: (p.querySelector('.gtitle') || {}).textContent || '',
            x: [...p.querySelectorAll('.xtick text')].map(t => t.textContent),
            y: [...p.querySelectorAll('.ytick text')].map(t => t.textContent)})),
        segmented: all('[role="radiogroup"] button[aria-checked="true"]').map(text),
        radios: all('[data-testid="stRadio"] label').filter(l => (l.querySelector('input') || {}).checked).map(text),
        selects: all('[data-testid="stSelectbox"] input').map(i => i.value),
        multiselects: all('[data-testid="stMultiSelect"]').map(text),
        sliders: all('[data-testid="stSlider"]').map(text),
        toggles: all('input[type="checkbox"]').map(i => i.checked),
        markdown: inMain('[data-testid="stMarkdownContainer"]').map(text).filter(t => t),
        iframes: all('[data-testid="stIFrame"]').length,
    };
}"""


def view_signature(page) -> dict:
    """What the page shows (charts, chosen options, text): two windows showing the same view give equal ones."""
    return page.evaluate(_VIEW_SIGNATURE)


def wait_signature(watch: Watch, expected: dict, timeout_s: float = WAIT_S) -> None:
    """Wait until the page shows exactly the view `expected` (a view_signature); on a timeout, name the difference."""
    try:
        watch.page.wait_for_function(
            f"expected => {{ const now = ({_VIEW_SIGNATURE})(); "
            "return JSON.stringify(now) === JSON.stringify(expected); }",
            arg=expected,
            timeout=timeout_s * 1000,
        )
    except Exception as e:
        now = view_signature(watch.page)
        diff = {k: (expected.get(k), now.get(k)) for k in set(expected) | set(now) if expected.get(k) != now.get(k)}
        raise AssertionError(
            f"the link shows another view: (expected, shown) {diff}; {_failure(watch, 'signature')}"
        ) from e


# JavaScript: whether the browser draws `text` in `font` (a CSS font shorthand) with real glyphs: each character is
# drawn on a canvas and compared with a character no font has (U+10FFFD), which every font draws as its empty box
# ("tofu"). A character drawn exactly like that box has no glyph in any font the stack falls back to.
_GLYPHS_DRAWN = """([text, font]) => {
    const canvas = document.createElement('canvas');
    canvas.width = 64; canvas.height = 64;
    const ctx = canvas.getContext('2d', {willReadFrequently: true});
    const draw = ch => {
        ctx.clearRect(0, 0, 64, 64);
        ctx.font = font; ctx.fillStyle = '#000'; ctx.textBaseline = 'top';
        ctx.fillText(ch, 4, 4);
        return Array.from(ctx.getImageData(0, 0, 64, 64).data).join(',');
    };
    const tofu = draw(String.fromCodePoint(0x10FFFD));
    return [...text].filter(ch => ch.trim() && draw(ch) === tofu);
}"""


def tofu(page, text: str, font: str) -> list[str]:
    """The characters of `text` that the browser draws as an empty box in `font` (e.g. '20px "Source Sans", sans-serif')."""
    return page.evaluate(_GLYPHS_DRAWN, [text, font])
