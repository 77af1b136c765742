"""Token strings as people should see them on axes and in hover text."""

from __future__ import annotations

from collections.abc import Sequence

_VISIBLE = {" ": "␣", "\t": "⇥", "\n": "⏎", "": "∅"}


def display_token(token: str, max_chars: int = 16) -> str:
    """Make whitespace visible and shorten very long tokens (the hover text keeps the full one)."""
    shown = _VISIBLE.get(token, token)
    return shown if len(shown) <= max_chars else shown[: max_chars - 1] + "…"


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
