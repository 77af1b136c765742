"""Token strings as people should see them on axes and in hover text, and tick layouts that stay readable.

Plotly reads <...> in labels as markup (so "</s>" would vanish): every shown token is HTML-escaped.
A space is shown as "·" (a middle dot): the usual "␣" reads as "u" at tick sizes on a projector.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

_VISIBLE = {" ": "·", "\t": "⇥", "\n": "⏎", "": "∅"}
SPACE = _VISIBLE[" "]

TICK_PX = 14  # tick label size: readable at 1366 px on a projector (never smaller)
TICK_COLOR = "#222222"  # on white: 15.9:1 contrast (WCAG asks 7:1 for AAA); Streamlit's default grey is ~3.7:1
TEXT_COLOR = "#222222"
MIN_TICK_GAP_PX = 18  # centre-to-centre distance below which neighbouring 14 px labels would touch
CHAR_PX = 8.5  # average width of one character of a 14 px sans-serif label


def plain_token(token: str, max_chars: int = 16) -> str:
    """Whitespace made visible and very long tokens shortened: for text widgets and markdown code spans."""
    shown = _VISIBLE.get(token, token)
    return shown if len(shown) <= max_chars else shown[: max_chars - 1] + "…"


def display_token(token: str, max_chars: int = 16) -> str:
    """plain_token, HTML-escaped: for plotly labels and hover text."""
    return html.escape(plain_token(token, max_chars), quote=False)


def display_tokens(tokens: Sequence[str], max_chars: int = 16) -> list[str]:
    return [display_token(t, max_chars) for t in tokens]


def hover_token(token: str, max_chars: int = 40) -> str:
    """A token for hover text: like display_token, but a space is named ("space"), not drawn as a symbol."""
    return "space" if token == " " else display_token(token, max_chars)


def indexed(tokens: Sequence[str]) -> list[str]:
    """Unique labels 'i: token': plotly merges equal category labels, so repeated tokens need their index."""
    return [f"{i}: {display_token(t)}" for i, t in enumerate(tokens)]


def tick_font_size(n: int) -> int:
    """Tick label size for n tokens: always TICK_PX. Long inputs get fewer labels (token_ticks), not smaller ones."""
    return TICK_PX


@dataclass(frozen=True)
class Ticks:
    """Which positions of a categorical token axis carry a label, the labels, and their angle."""

    vals: list[int]
    text: list[str]
    angle: int  # 0: horizontal; -90: vertical (only when horizontal labels would overlap)
    step: int  # every step-th token is labelled

    def axis(self) -> dict:
        """Keyword arguments for fig.update_xaxes / update_yaxes."""
        return dict(tickmode="array", tickvals=self.vals, ticktext=self.text, tickangle=self.angle,
                    tickfont=dict(size=TICK_PX, color=TICK_COLOR))


def token_ticks(tokens: Sequence[str], px_per_token: float, horizontal: bool = True) -> Ticks:
    """Readable ticks for a token axis whose tokens are px_per_token apart on screen.

    Labels are TICK_PX high and never shrink: when tokens are closer than MIN_TICK_GAP_PX, only every
    step-th token is labelled (the hover still names every cell). On the x axis (horizontal=True) labels
    stay horizontal when they fit side by side; single characters are never rotated. Otherwise they stand
    at -90 degrees, one line of text each, which never overlap once the step is kept.
    """
    n = len(tokens)
    step = max(1, math.ceil(MIN_TICK_GAP_PX / max(px_per_token, 1e-6))) if n else 1
    vals = list(range(0, n, step))
    text = [display_token(tokens[i]) for i in vals]
    angle = 0
    if horizontal and text:
        widest = max(len(plain_token(tokens[i])) for i in vals)
        if widest > 1 and widest * CHAR_PX + 4 > px_per_token * step:
            angle = -90
    return Ticks(vals, text, angle, step)
