"""Exact match of a demo's task under interventions, as the pages cache it (the task half of model/intervened.py).

    fresh_examples(card, n)                                              n examples the demo never trained on
    exact_match_with(model, tokenizer, examples, changes) -> MatchResult exact match and a typical failure

Decoding goes through the library's one core (greedy_ids with the interventions applied by the recording hooks at
every step); this module adds the task: fresh examples per demo and a result with a typical failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import nn

from model.decoding import greedy_ids, step_limit
from model.interventions import Interventions
from model.text.inputs import require_eval
from model.text.tokenizer import Tokenizer

from .evaluate import exact_match, source_ids, strip_eos
from .registry import get_task
from .tasks import Example, dataset, held_out

FRESH_SEED_OFFSET = 4  # held_out seeds: +1 the card's report, +2 the training progress bar, +3 the tests


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
    if card.get("shape") != "decoder-only":
        return held_out(task, n, seed + FRESH_SEED_OFFSET, exclude=train)
    # a decoder-only demo (tasks/decoder_only.py): trained on strings of at most recipe.max_length letters, as its
    # card's report; its input is the prompt `source=`
    from .decoder_only import prompt

    longest = int(card["recipe"].get("max_length", 10**9))
    fresh = [e for e in held_out(task, 3 * n, seed + FRESH_SEED_OFFSET, exclude=train) if len(e.source) <= longest]
    return [replace(e, source=prompt(e.source)) for e in fresh[:n]]


@dataclass
class MatchResult:
    """Exact match of greedy outputs on some examples, under some interventions (describe() form)."""

    exact_match: float
    examples: int
    interventions: dict
    failure: tuple[str, str, str] | None  # (source, target, output) of the first example the model got wrong


def exact_match_fresh(
    model: nn.Module, tokenizer: Tokenizer, card: dict, n: int, changes: Interventions
) -> MatchResult:
    """exact_match_with on n fresh examples of a demo's task (fresh_examples: UnknownTraining when the card does
    not say how it was trained): one call, for a worker process."""
    return exact_match_with(model, tokenizer, fresh_examples(card, n), changes)


def agreement_fresh(model: nn.Module, tokenizer: Tokenizer, card: dict, n: int, changes: Interventions,
                    methods=None, progress=None, **settings):  # fmt: skip
    """The attribution methods' agreement averaged over n fresh examples of a demo's task (model.analysis.
    attribution_agreement.agreement_over): one call, for a worker process."""
    from model.analysis.attribution import METHODS
    from model.analysis.attribution_agreement import agreement_over

    examples = fresh_examples(card, n)
    return agreement_over(model, tokenizer, examples, methods or METHODS, interventions=changes, progress=progress,
                          **settings)  # fmt: skip


def match_params(n: int, changes: Interventions) -> tuple:
    """The parameters under which an exact match on n fresh examples with `changes` is kept (on disk, in a shipped
    demo's results.json): (n,) as trained, else (n, the changes as sorted JSON)."""
    import json

    return (n,) if not changes else (n, json.dumps(changes.describe(), sort_keys=True))


def match_to_json(result: MatchResult) -> dict:
    """A MatchResult as JSON (a shipped demo's results.json)."""
    return {"exact_match": result.exact_match, "examples": result.examples, "interventions": result.interventions,
            "failure": None if result.failure is None else list(result.failure)}  # fmt: skip


def match_from_json(data: dict) -> MatchResult:
    failure = data.get("failure")
    return MatchResult(float(data["exact_match"]), int(data["examples"]), dict(data.get("interventions") or {}),
                       None if failure is None else tuple(str(x) for x in failure))  # fmt: skip


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
