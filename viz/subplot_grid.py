"""A grid of panels as a plain layout dict: what plotly's make_subplots builds, without its cost.

make_subplots builds a Figure and walks plotly's validators for every axis and title; read back with
`to_plotly_json()` it also carries plotly's whole default template. For the all-layers overview (48 panels of the
base model) that was more than half the figure's time. Here the same domains, anchors, shared axes and titles are
computed directly; the one go.Figure(data, layout) call that follows validates them once.
"""

from __future__ import annotations

from collections.abc import Sequence

TITLE_FONT_PX = 16  # make_subplots' size for panel titles (callers restyle them)


def axis_suffix(i: int) -> str:
    """Panel i (from 1, row by row) is drawn on axes x{suffix}/y{suffix}: "" for the first, "2", "3", ..."""
    return str(i) if i > 1 else ""


def _unit(domain: list[float]) -> list[float]:
    """A domain inside [0, 1] (the sums above can land a rounding error outside it, which plotly refuses)."""
    return [min(1.0, max(0.0, v)) for v in domain]


def grid_layout(
    rows: int,
    cols: int,
    horizontal_spacing: float,
    vertical_spacing: float,
    titles: Sequence[str] = (),
    column_titles: Sequence[str] = (),
    row_titles: Sequence[str] = (),
    shared_x: bool = False,
    shared_y: bool = False,
) -> dict:
    """Layout entries for rows x cols panels numbered row by row from the top left, as make_subplots lays them out:
    equal panels, spacings as fractions of the plot area, `titles` above each panel (row by row, fewer allowed),
    `column_titles` above the top row, `row_titles` centred on each row (on the right, turned, as make_subplots;
    without the strip it keeps for them). shared_x: each column's axes follow its bottom panel's, only the bottom
    panel shows tick labels; shared_y: each row's follow its first panel's, only the first shows them."""
    if rows < 1 or cols < 1:
        raise ValueError(f"a grid needs at least one row and one column, got {rows} x {cols}")
    width = (1 - horizontal_spacing * (cols - 1)) / cols
    height = (1 - vertical_spacing * (rows - 1)) / rows
    x_step, y_step = width + horizontal_spacing, height + vertical_spacing
    x_domain = [_unit([c * x_step, c * x_step + width]) for c in range(cols)]
    y_domain = [_unit([1 - r * y_step - height, 1 - r * y_step]) for r in range(rows)]
    layout: dict = {}
    for r in range(rows):
        for c in range(cols):
            i = r * cols + c + 1
            s = axis_suffix(i)
            x = {"anchor": f"y{s}", "domain": x_domain[c]}
            y = {"anchor": f"x{s}", "domain": y_domain[r]}
            if shared_x and r < rows - 1:
                x.update(matches=f"x{axis_suffix((rows - 1) * cols + c + 1)}", showticklabels=False)
            if shared_y and c > 0:
                y.update(matches=f"y{axis_suffix(r * cols + 1)}", showticklabels=False)
            layout[f"xaxis{s}"], layout[f"yaxis{s}"] = x, y

    def note(text: str, x: float, y: float, **extra) -> dict:
        return dict(text=text, x=x, y=y, xref="paper", yref="paper", showarrow=False, font=dict(size=TITLE_FONT_PX),
                    **{"xanchor": "center", "yanchor": "bottom", **extra})  # fmt: skip

    notes = [note(t, sum(x_domain[i % cols]) / 2, y_domain[i // cols][1]) for i, t in enumerate(titles[: rows * cols])]
    notes += [note(t, sum(x_domain[c]) / 2, 1.0) for c, t in enumerate(column_titles[:cols])]
    notes += [
        note(t, x_domain[-1][1], sum(y_domain[r]) / 2, xanchor="left", yanchor="middle", textangle=90)
        for r, t in enumerate(row_titles[:rows])
    ]
    if notes:
        layout["annotations"] = notes
    return layout
