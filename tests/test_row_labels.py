"""A chart that names each row (the Inside page's key and value vectors) shown shorter or with larger text than its
builder planned: presentation mode caps its height at the screen's and draws 18 px labels. viz.tokens.thin_row_labels
keeps every step-th label, so that none overlaps the next. Checked in Chromium, where plotly draws the labels: their
boxes measured, not the rule's own arithmetic."""

from __future__ import annotations

import numpy as np

from viz.inside_figs import query_keys
from viz.tokens import ensure_readable, thin_row_labels

PROJECTOR_PX = 744  # ui/shell/presentation.fit_height's cap: a 768 px screen less the toolbar's room
PRESENT_TEXT_PX = 18


def _figure(n_keys: int, height: int | None):
    rng = np.random.default_rng(0)
    tokens = [f"tok{i}" for i in range(n_keys)]
    fig = query_keys(rng.normal(size=16), rng.normal(size=(n_keys, 16)), "q", tokens)
    ensure_readable(fig, PRESENT_TEXT_PX)
    if height:
        fig.layout.height = height
    return fig


# the y labels plotly drew, per axis: [top, bottom] of each label's box, in page px
_LABEL_BOXES = """gd => Object.fromEntries(['ytick', 'y2tick'].map(c => [c, [...gd.querySelectorAll(`g.${c} text`)]
    .map(t => t.getBoundingClientRect()).filter(r => r.height > 0).map(r => [r.top, r.bottom])]))"""


def _drawn(browser, fig) -> dict:
    from plotly.offline import get_plotlyjs

    page = browser.new_page(viewport={"width": 1366, "height": 900})
    try:
        page.set_content(f"<!doctype html><meta charset='utf-8'><script>{get_plotlyjs()}</script><div id='c'></div>")
        gd = page.evaluate_handle("s => (f => Plotly.newPlot('c', f.data, f.layout))(JSON.parse(s))", fig.to_json())
        return page.evaluate(_LABEL_BOXES, gd)
    finally:
        page.close()


def _overlaps(boxes: list) -> int:
    ordered = sorted(boxes)
    return sum(b[0] < a[1] for a, b in zip(ordered, ordered[1:], strict=False))


def test_the_rows_labels_of_a_chart_cut_to_a_projectors_height_do_not_overlap(browser):
    """48 keys at a projector's height and 18 px text: every label drawn overlaps the next; thinned, none does, the
    first key stays labelled, the labels kept are every step-th, and every row is still drawn (its hover names it)."""
    full = _drawn(browser, _figure(48, PROJECTOR_PX))
    assert _overlaps(full["y2tick"]) >= 20  # (so a pass below means something)
    fig = thin_row_labels(_figure(48, PROJECTOR_PX), PRESENT_TEXT_PX)
    vals, text = list(fig.layout.yaxis2.tickvals), list(fig.layout.yaxis2.ticktext)
    step = vals[1] - vals[0]
    assert step >= 2 and vals == list(range(0, 48, step)) and text[1] == f"{step}: tok{step}"
    assert np.asarray(fig.data[1].z).shape == (48, 16)
    thinned = _drawn(browser, fig)
    assert len(thinned["y2tick"]) == len(vals) and _overlaps(thinned["y2tick"]) == 0
    assert len(thinned["ytick"]) == 1  # the query's one label, untouched


def test_a_chart_whose_rows_fit_their_labels_keeps_every_label(browser):
    """12 keys at the builder's own height: every row labelled, none overlapping, and thin_row_labels leaves it so."""
    fig = _figure(12, None)
    before = list(fig.layout.yaxis2.tickvals)
    assert list(thin_row_labels(fig, PRESENT_TEXT_PX).layout.yaxis2.tickvals) == before == list(range(12))
    assert _overlaps(_drawn(browser, fig)["y2tick"]) == 0
