"""Token strings as people should see them on axes and in hover text.

Plotly reads <...> in labels as markup (so "</s>" would vanish): every shown token is HTML-escaped.
"""

from __future__ import annotations

import html

from collections.abc import Sequence

_VISIBLE = {" ": "␣", "\t": "⇥", "\n": "⏎", "": "∅"}


def plain_token(token: str, max_chars: int = 16) -> str:
    """Whitespace made visible and very long tokens shortened: for text widgets and markdown code spans."""
    shown = _VISIBLE.get(token, token)
    return shown if len(shown) <= max_chars else shown[: max_chars - 1] + "…"


def display_token(token: str, max_chars: int = 16) -> str:
    """plain_token, HTML-escaped: for plotly labels and hover text."""
    return html.escape(plain_token(token, max_chars), quote=False)


def display_tokens(tokens: Sequence[str], max_chars: int = 16) -> list[str]:
    return [display_token(t, max_chars) for t in tokens]


def indexed(tokens: Sequence[str]) -> list[str]:
    """Unique labels 'i: token': plotly merges equal category labels, so repeated tokens need their index."""
    return [f"{i}: {display_token(t)}" for i, t in enumerate(tokens)]


def tick_font_size(n: int) -> int:
    """Readable tick labels for n tokens: large for short inputs, smaller (never tiny) for long ones."""
    if n <= 16:
        return 14
    if n <= 40:
        return 12
    if n <= 80:
        return 10
    return 8
