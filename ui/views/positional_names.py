"""The titles of the positional kinds, as the pages show them (marked only: translate where shown, _(KINDS[kind])),
read from the kinds' registry (model/network/position_kinds/).

Its own module so that the presentation badge and the positional page share it without importing each other."""

import re

from model.network.position_kinds.registry import kinds

KINDS = {name: k.TITLE for name, k in kinds().items()}


_GLOSS = re.compile(r"\s*[（(][^（）()]*[）)]\s*$")  # a closing gloss in parentheses, ASCII or full-width


def without_gloss(title: str) -> str:
    """A shown title without its closing gloss: "RoPE（旋转位置编码）" -> "RoPE", "Sinusoidal (fixed)" -> "Sinusoidal"
    (a row of six metrics on a projector: the full title goes to the metric's help)."""
    return _GLOSS.sub("", title) or title
