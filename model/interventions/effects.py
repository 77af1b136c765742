"""Decoding and exact match under interventions, as the pages call them (what model/intervened.py did).

    decode(model, tokenizer, source, changes, top_k, prefix) -> Trace    greedy decoding with heads/positions changed
    fresh_examples(card, n)                                              n examples the demo never trained on
    exact_match_with(model, tokenizer, examples, changes) -> MatchResult exact match and a typical failure

Both go through the one decoding core (greedy_decode / greedy_ids with the interventions applied by the
recording hooks at every step); this module only adds what the pages cache: fresh examples per demo and a result
with a typical failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from ..decoding import Trace, greedy_decode, greedy_ids, step_limit
from ..evaluate import exact_match, source_ids, strip_eos
from ..inputs import prepare_source, require_eval
from ..tasks import Example, dataset, get_task, held_out
from ..tokenizer import Tokenizer
from .value import Interventions

FRESH_SEED_OFFSET = 4  # held_out seeds: +1 the card's report, +2 the training progress bar, +3 the tests


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


class UnknownTraining(ValueError):
    """A model's card does not say what it was trained on: no fresh examples can be drawn for it."""


def fresh_examples(card: dict, n: int = 200) -> list[Example]:
    """n examples of a shipped demo's task that it never trained on (its card names task, seed and train_size).

    UnknownTraining (a ValueError) when the card does not say how the model was trained."""
    try:
        task = get_task(card["task"])
        seed, size = int(card["seed"]), int(card["recipe"]["train_size"])
    except (KeyError, TypeError, ValueError):
        raise UnknownTraining("the model's card does not name a known task, seed and training size") from None
    train = {e.source for e in dataset(task, size, seed)}
    return held_out(task, n, seed + FRESH_SEED_OFFSET, exclude=train)


@dataclass
class MatchResult:
    """Exact match of greedy outputs on some examples, under some interventions (describe() form)."""

    exact_match: float
    examples: int
    interventions: dict
    failure: tuple[str, str, str] | None  # (source, target, output) of the first example the model got wrong


@torch.no_grad()
def exact_match_with(
    model: nn.Module, tokenizer: Tokenizer, examples: Sequence[Example], changes: Interventions = Interventions()
) -> MatchResult:
    """Batched greedy decoding of every example with `changes` applied, scored by exact match."""
    require_eval(model)
    src = source_ids(model, tokenizer, [e.source for e in examples])
    changes.check(model, [len(s) for s in src] + [step_limit(model, len(s)) for s in src])
    outputs = greedy_ids(model, src, batch_size=64, interventions=changes)  # the one core, changes at every step
    score = exact_match(model, tokenizer, examples, outputs)
    vocab, failure = tokenizer.target, None
    for ex, out in zip(examples, outputs):
        if list(out) != vocab.encode(ex.target) + [model.config.eos_id]:
            failure = (ex.source, ex.target, vocab.detokenize(vocab.decode(strip_eos(out, model.config.eos_id))))
            break
    return MatchResult(score, len(examples), changes.describe(), failure)
