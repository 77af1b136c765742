"""The trained-range warning: an input longer or shorter than the model was trained on. No torch here: the lecture
pack's page builder writes the same message for the page's own check."""

from __future__ import annotations

from i18n import M_, N_


def trained_range_warning(card: dict, text: str, vocab, complete: bool = True) -> str | None:
    """A warning when the text is longer or shorter than what the model was trained on, else None.

    card["input_tokens"] = {"min": ..., "max": ..., "unit": "characters" | "words"} is written by the
    training command (the range of the training sources). Models without it get no warning. complete False: `text`
    is the prefix check_text read of a longer text (InputCheck.complete): past the range, the warning says "more
    than" its count.
    """
    bounds = card.get("input_tokens") if isinstance(card, dict) else None
    if not isinstance(bounds, dict):
        return None
    low, high, unit = bounds.get("min"), bounds.get("max"), str(bounds.get("unit", "tokens"))
    if not (isinstance(low, int) and isinstance(high, int)):
        return None
    symbols = vocab.split(text) if hasattr(vocab, "split") else text.split()
    n = len(symbols)
    if low <= n <= high or n == 0:  # a prefix within the range: the model reads no more than it either
        return None
    units = {"characters": N_("characters"), "words": N_("words"), "tokens": N_("tokens")}
    template = TRAINED_RANGE if complete else TRAINED_RANGE_MORE
    return M_(template, low=low, high=high, unit=M_(units[unit]) if unit in units else unit, n=n)


TRAINED_RANGE = N_(
    "This model was trained on inputs of {low} to {high} {unit}; yours has {n}. "
    "Outside that range its output is often wrong (repeated or missing tokens): read the result "
    "as what an untrained length does, not as what the model learned."
)
TRAINED_RANGE_MORE = N_(
    "This model was trained on inputs of {low} to {high} {unit}; yours has more than {n}. "
    "Outside that range its output is often wrong (repeated or missing tokens): read the result "
    "as what an untrained length does, not as what the model learned."
)
