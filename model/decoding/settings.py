"""What a decoding strategy can be told: one `Setting` per keyword argument of its `decode()`, declared in its module
(`SETTINGS`), so that every place that offers the strategy (the decoding page's controls, its link, a check of a
link's value) reads one declaration."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    name: str  # the keyword of the strategy's decode()
    link: str  # its key in the decoding page's link
    default: float
    low: float
    high: float | None  # None: the model's target vocabulary size
    title: str  # the control's label (marked with N_, translated where shown)
    what: str  # how a message names it ("the beam size"), marked with N_
    help: str = ""  # marked with N_ when given
    step: float = 1
    digits: int = 0  # 0: a whole number; otherwise the decimals kept (the control's and the link's precision)

    def bounds(self, vocab_size: int) -> tuple[float, float]:
        return self.low, float(vocab_size if self.high is None else self.high)

    def cast(self, raw: object) -> float:
        """The value as the strategy takes it: a whole number, or a float rounded to `digits` (nan and inf stay, for
        the bounds to refuse); ValueError when the text is no such number."""
        if self.digits == 0:
            return int(raw)  # type: ignore[call-overload]
        value = float(raw)  # type: ignore[arg-type]
        return round(value, self.digits) if math.isfinite(value) else value
