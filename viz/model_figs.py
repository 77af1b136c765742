"""Model inspector figures: where the parameters are, and how the weights are distributed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from i18n import _

from .tokens import readable


def parameter_bars(counts: Mapping[str, int]) -> go.Figure:
    """Horizontal bars of parameters per part, in model order, with the share of the total."""
    names, values = list(counts), list(counts.values())
    total = sum(values) or 1
    fig = go.Figure(
        go.Bar(
            x=values,
            y=names,
            orientation="h",
            text=[f"{v:,} ({v / total:.1%})" for v in values],
            textposition="auto",
            hovertemplate="%{y}<br>" + _("%{x:,} parameters") + "<extra></extra>",
        )
    )
    fig.update_xaxes(title_text=_("parameters"))
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(
        title=_("Parameters per part ({total} in all)").format(total=f"{total:,}"),
        height=120 + 28 * len(names),
        margin=dict(t=50, l=10, r=10, b=10),
    )
    return readable(fig)


def weight_spread(names: Sequence[str], std: Sequence[float], max_abs: Sequence[float]) -> go.Figure:
    """Standard deviation and largest magnitude of each weight tensor, one row per tensor."""
    if not len(names) == len(std) == len(max_abs):
        raise ValueError(f"{len(names)} names, {len(std)} std values, {len(max_abs)} max values")
    fig = go.Figure(
        [
            go.Bar(x=list(std), y=list(names), orientation="h", name=_("std")),
            go.Bar(x=list(max_abs), y=list(names), orientation="h", name="max |w|"),
        ]
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(
        barmode="group",
        title=_("Weight statistics per tensor"),
        height=120 + 24 * len(names),
        legend=dict(orientation="h", y=1.02, yanchor="bottom"),
        margin=dict(t=70, l=10, r=10, b=10),
    )
    return readable(fig)
