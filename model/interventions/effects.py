"""What a positional intervention allows for one input: max_shift(model, tokenizer, source) -> int, the largest
shift a source allows. Decoding under interventions is greedy_decode(..., interventions=changes) (the one decoding
core, with the interventions applied by the recording hooks at every step); exact match of a demo's task under
interventions is task evaluation: tasks/intervened.py.
"""

from __future__ import annotations

from torch import nn

from ..text.inputs import prepare_source
from ..text.tokenizer import Tokenizer


def max_shift(model: nn.Module, tokenizer: Tokenizer, source: str) -> int:
    """The largest k for positional="shifted" that decoding `source` allows: every source position p + k must stay
    within max_len (0: no room to shift); the decoder then gets max_len - k steps at most (the one core's
    `checked_limit` shortens its step limit so that its shifted positions fit too)."""
    src_len = len(prepare_source(model, tokenizer, source).ids)
    return max(0, min(model.config.max_len - src_len, model.config.max_len - 1))
