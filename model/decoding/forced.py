"""Forced prefix: the caller picks the first outputs (a reader clicked other candidates), greedy choice after them.

`greedy_decode(..., prefix=ids)` runs this policy; `decode(..., prefix=ids)` is its entry in the STRATEGIES
registry."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from i18n import N_

from ..interventions import NONE, Interventions
from ..text.tokenizer import Tokenizer
from .trace import Trace, decode_trace

NAME = "forced"
TITLE = N_("Forced prefix")
LINK = None  # not in the decoding page's menu: a prefix is forced by picking another candidate at a step
SETTINGS = ()


class ForcedPrefix:
    """A Chooser: step t < len(prefix) takes prefix[t] in every row; later steps the argmax."""

    def __init__(self, prefix: Sequence[int], vocab_size: int):
        bad = [i for i in prefix if not 0 <= int(i) < vocab_size]
        if bad:
            raise ValueError(f"prefix ids {bad} are outside the target vocabulary (0..{vocab_size - 1})")
        self.prefix = [int(i) for i in prefix]

    def forced(self, t: int) -> bool:
        return t < len(self.prefix)

    def __call__(self, t: int, logits: torch.Tensor) -> torch.Tensor:
        if t < len(self.prefix):
            return torch.full((logits.size(0),), self.prefix[t], dtype=torch.long, device=logits.device)
        return logits.argmax(-1)


@torch.no_grad()
def decode(
    model: nn.Module,
    tokenizer: Tokenizer,
    source: str,
    *,
    interventions: Interventions = NONE,
    max_len: int | None = None,
    prefix: Sequence[int] = (),
    shown: int = 5,
) -> Trace:
    choose = ForcedPrefix(prefix, model.config.tgt_vocab_size)  # past the prefix (or with none): the argmax
    return decode_trace(
        model, tokenizer, source, choose, max_len, shown, forced=choose.forced, interventions=interventions
    )
