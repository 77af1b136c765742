"""viz/subplot_grid.py lays panels out as plotly's make_subplots does (checked against make_subplots itself)."""

import numpy as np
import pytest
from plotly.subplots import make_subplots

from viz.subplot_grid import grid_layout


def _axes(layout: dict) -> dict:
    return {k: v for k, v in layout.items() if k.startswith(("xaxis", "yaxis"))}


@pytest.mark.parametrize(
    "rows, cols, hs, vs, shared",
    [(1, 1, 0.02, 0.0, False), (2, 3, 0.015, 0.1, True), (6, 8, 0.015, 0.03, False), (3, 2, 0.05, 0.2, True)],
)
def test_domains_anchors_and_shared_axes_are_make_subplots(rows, cols, hs, vs, shared):
    titles = [f"t{i}" for i in range(rows * cols - 1)]  # one panel without a title
    ours = grid_layout(rows, cols, hs, vs, titles=titles, shared_x=shared, shared_y=shared)
    theirs = make_subplots(
        rows=rows, cols=cols, horizontal_spacing=hs, vertical_spacing=vs, subplot_titles=titles,
        shared_xaxes=shared, shared_yaxes=shared,
    ).layout.to_plotly_json()  # fmt: skip
    mine, want = _axes(ours), _axes(theirs)
    assert set(mine) == set(want)
    for name, axis in want.items():
        assert np.allclose(mine[name].pop("domain"), axis.pop("domain")), name
        assert mine[name] == axis, name
    ours_notes, theirs_notes = ours.get("annotations", []), theirs.get("annotations", [])
    assert len(ours_notes) == len(theirs_notes) == len(titles)
    for a, b in zip(ours_notes, theirs_notes, strict=True):
        assert a["text"] == b["text"] and np.isclose(a["x"], b["x"]) and np.isclose(a["y"], b["y"])
        assert (a["xanchor"], a["yanchor"], a["font"]["size"]) == (b["xanchor"], b["yanchor"], b["font"]["size"])


def test_column_and_row_titles_sit_over_columns_and_beside_rows():
    layout = grid_layout(2, 3, 0.015, 0.03, column_titles=["h0", "h1", "h2"], row_titles=["l0", "l1"])
    notes = {n["text"]: n for n in layout["annotations"]}
    for c in range(3):
        domain = layout[f"xaxis{c + 1 if c else ''}"]["domain"]
        assert np.isclose(notes[f"h{c}"]["x"], sum(domain) / 2) and notes[f"h{c}"]["y"] == 1.0
    for r in range(2):
        domain = layout[f"yaxis{r * 3 + 1 if r else ''}"]["domain"]
        assert np.isclose(notes[f"l{r}"]["y"], sum(domain) / 2) and notes[f"l{r}"]["textangle"] == 90


def test_an_empty_grid_is_refused():
    with pytest.raises(ValueError, match="got 0 x 3"):
        grid_layout(0, 3, 0.01, 0.01)
