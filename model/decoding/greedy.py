"""Greedy decoding: the most probable token at every step, each step's attention and top-k candidates recorded."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from i18n import N_

from ..interventions import NONE, Interventions
from ..text.tokenizer import Tokenizer
from .core import greedy_choice
from .forced import ForcedPrefix
from .trace import Trace, decode_trace

NAME = "greedy"
TITLE = N_("Greedy")  # the decoding page's menu
LINK = "greedy"  # how the page's link writes it (dec_strategy=...)
APP = "ui.views.decoding_views.greedy"  # its app half: the view the decoding page shows
SETTINGS = ()  # nothing to set: the most probable token at every step


@torch.no_grad()
def greedy_decode(
    model: nn.Module,
    tokenizer: Tokenizer,
    source: str,
    max_len: int | None = None,
    top_k: int = 5,
    use_cache: bool = True,
    prefix: Sequence[int] = (),
    stop_at_eos: bool = True,
    ablate: Sequence[tuple[str, int, int]] | None = None,
    positional: str | None = None,
    shift: int = 1,
    seed: int = 0,
    interventions: Interventions | None = None,
    max_new_tokens: int | None = None,
) -> Trace:
    """Decode `source` greedily, recording each step's attention rows and top-k candidates.

    A decoder-only model continues `source` (the prompt): Trace.text is the continuation. max_new_tokens is
    another name for max_len (transformers' generate() calls it so).

    max_len: most tokens to generate (default and bound: `step_limit`). prefix: token ids to force as
    the first outputs (the user picked other candidates, forced.py); greedy choice continues after them.
    stop_at_eos=False keeps going past </s> (for benchmarks).
    interventions (an `Interventions` value), or the keywords ablate, positional, shift, seed as in `capture`
    (model/interventions/), applied at every step; ValueError names a bad one before any work.
    Trace.interventions records them.
    """
    changes = Interventions.given(interventions, ablate=ablate, positional=positional, shift=shift, seed=seed)
    max_len = max_new_tokens if max_len is None else max_len
    choose = ForcedPrefix(prefix, model.config.tgt_vocab_size) if len(prefix) else None
    return decode_trace(model, tokenizer, source, choose or greedy_choice, max_len, top_k, use_cache, stop_at_eos,
                        forced=choose.forced if choose else (lambda t: False), interventions=changes)  # fmt: skip


def decode(
    model: nn.Module,
    tokenizer: Tokenizer,
    source: str,
    *,
    interventions: Interventions = NONE,
    max_len: int | None = None,
    shown: int = 5,
) -> Trace:
    return greedy_decode(model, tokenizer, source, max_len, shown, interventions=interventions)
