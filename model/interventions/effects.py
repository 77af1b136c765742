"""Decoding under interventions, as the pages call it (half of what model/intervened.py did; exact match of a demo's
task under interventions is task evaluation: tasks/intervened.py).

    decode(model, tokenizer, source, changes, top_k, prefix) -> Trace    greedy decoding with heads/positions changed
    max_shift(model, tokenizer, source) -> int                           the largest shift a source allows

It goes through the one decoding core (greedy_decode with the interventions applied by the recording hooks at
every step).
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn

from ..decoding import Trace, greedy_decode
from ..text.inputs import prepare_source
from ..text.tokenizer import Tokenizer
from .value import Interventions


def decode(
    model: nn.Module,
    tokenizer: Tokenizer,
    source: str,
    changes: Interventions = Interventions(),
    top_k: int = 5,
    prefix: Sequence[int] = (),
) -> Trace:
    """greedy_decode(model, tokenizer, source, top_k=top_k, prefix=prefix) with `changes` applied to every step.

    ValueError when a change does not fit the model (a head it lacks, a shift past max_len)."""
    return greedy_decode(model, tokenizer, source, top_k=top_k, prefix=prefix, interventions=changes)


def max_shift(model: nn.Module, tokenizer: Tokenizer, source: str) -> int:
    """The largest k for positional="shifted" that decoding `source` allows: every source position p + k must stay
    within max_len (0: no room to shift); the decoder then gets max_len - k steps at most (the one core's
    `checked_limit` shortens its step limit so that its shifted positions fit too)."""
    src_len = len(prepare_source(model, tokenizer, source).ids)
    return max(0, min(model.config.max_len - src_len, model.config.max_len - 1))
