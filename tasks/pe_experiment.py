"""The positional experiment: exact match on fresh examples with and without an intervention, and a verdict.

    held_out(task, n, seed) --batched greedy (decoding.greedy_ids, the one core)--> exact match, unchanged
                            --the same, with positions removed / shuffled / shifted (or heads off)--> exact match
    --> a typical failure (source, expected, got) and one line saying what changed

Both runs decode all n sources at once, and stop one token past the longest expected output (an output
still going there is wrong anyway), so 200 examples of a demo model take a few seconds at most.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from torch import nn

from i18n import N_, _
from model.decoding import greedy_ids
from model.interventions import Interventions
from model.text.tokenizer import Tokenizer

from .evaluate import source_ids, strip_eos
from .registry import get_task
from .tasks import Example, Task, dataset, held_out

VERDICTS = {
    "collapse": N_("With {change}, exact match collapses from {before} to {after} on {n} fresh examples."),
    "drop": N_("With {change}, exact match drops from {before} to {after} on {n} fresh examples."),
    "rise": N_("With {change}, exact match rises from {before} to {after} on {n} fresh examples."),
    "same": N_("With {change}, exact match stays at {after} (unchanged: {before}) on {n} fresh examples."),
    "plain": N_("Exact match {before} on {n} fresh examples."),
}
COLLAPSE_BELOW = 0.2  # exact match under the change below this (from at least 0.5) is a collapse
NOTICEABLE = 0.05  # a change in exact match smaller than this counts as "stays"


@dataclass(frozen=True)
class Failure:
    """One example the model got wrong."""

    source: str
    expected: str
    got: str


@dataclass
class PositionalExperiment:
    """Exact match on the same n fresh examples, unchanged and with `interventions` (each a fraction 0..1)."""

    task: str
    n: int
    seed: int  # held_out seed of the examples
    interventions: dict  # what the changed run changed (Interventions.describe()); {} for none
    exact_match: float  # the unchanged model
    exact_match_changed: float  # with the interventions (equal to exact_match when there are none)
    failure: Failure | None  # a typical failure of the changed run (of the unchanged one when nothing changed);
    # its output is cut one token past the longest expected output of the n examples
    verdict: str  # one line in the current language, e.g. "With positions removed, exact match collapses ..."
    failures: int  # how many of the n examples that run got wrong


def describe_change(changes: Interventions) -> str:
    """The change in words of the current language: "positions shifted by 3, 2 heads switched off" (each kind
    says its own words, model/interventions/)."""
    return changes.label()


def verdict(before: float, after: float, n: int, changes: Interventions) -> str:
    """One line saying how exact match moved under the change (translated, numbers formatted after)."""
    if not changes:
        key = "plain"
    elif after < COLLAPSE_BELOW <= 0.5 <= before:
        key = "collapse"
    elif before - after >= NOTICEABLE:
        key = "drop"
    elif after - before >= NOTICEABLE:
        key = "rise"
    else:
        key = "same"
    return _(VERDICTS[key]).format(change=describe_change(changes), before=f"{before:.0%}", after=f"{after:.0%}", n=n)


def typical_failure(examples: Sequence[Example], got: Sequence[str], right: Sequence[bool]) -> Failure | None:
    """Among the examples not `right`, the one whose source length is the median of theirs (the first such)."""
    wrong = [(e, g) for e, g, ok in zip(examples, got, right, strict=True) if not ok]
    if not wrong:
        return None
    lengths = sorted(len(e.source) for e, _ in wrong)
    middle = lengths[len(lengths) // 2]
    example, output = next((e, g) for e, g in wrong if len(e.source) == middle)
    return Failure(example.source, example.target, output)


@functools.lru_cache(maxsize=8)
def training_sources(task: str, train_size: int, seed: int) -> frozenset[str]:
    """The sources a demo was trained on (its card: task, recipe.train_size, seed), to keep examples fresh.
    Seconds for 100,000 examples, so kept once per process."""
    return frozenset(e.source for e in dataset(get_task(task), train_size, seed))


def positional_experiment(
    model: nn.Module,
    tokenizer: Tokenizer,
    task: Task | str,
    n: int = 200,
    seed: int = 0,
    positional: str | None = "off",
    shift: int = 1,
    shuffle_seed: int = 0,
    ablate: Sequence[tuple[str, int, int]] | None = None,
    exclude: Iterable[str] = (),
    batch_size: int = 256,
    interventions: Interventions | None = None,
) -> PositionalExperiment:
    """Exact match of greedy decoding on n fresh examples of `task` (`held_out(task, n, seed, exclude)`),
    unchanged and with positional="off" | "shuffled" (permutation shuffle_seed) | "shifted" (by shift) and/or
    the ablated heads, with a typical failure and a verdict. positional=None and no ablate: the unchanged
    model alone (its failure and a plain verdict), e.g. for a model trained without positions.
    exclude: sources the examples must avoid, e.g. `training_sources(...)` of the model's card.
    """
    # bad arguments are named first; interventions=... replaces positional (default "off"), shift, seed and ablate
    keywords = dict(ablate=ablate, positional=positional, shift=shift, seed=shuffle_seed)
    if interventions is not None:  # the default positional="off" then asks for nothing
        keywords["positional"] = None if positional == "off" else positional
    changes = Interventions.given(interventions, **keywords)
    if not 1 <= n <= 10_000:
        raise ValueError(f"n must be from 1 to 10,000 examples, got {n}")
    task = get_task(task) if isinstance(task, str) else task
    examples = held_out(task, n, seed, exclude=set(exclude))
    src = source_ids(model, tokenizer, [e.source for e in examples])
    vocab = tokenizer.target

    def right(outputs: list[list[int]]) -> list[bool]:
        """Exact match as `evaluate.exact_match` counts it: the target's tokens, then </s>."""
        return [list(o) == vocab.encode(e.target) + [vocab.eos_id] for e, o in zip(examples, outputs, strict=True)]

    # one token past the longest target decides every exact match (an output still going there is wrong)
    steps = max(len(vocab.split(e.target)) for e in examples) + 1
    ids = dict(max_steps=steps, batch_size=batch_size, bos_id=vocab.bos_id, eos_id=vocab.eos_id)
    plain = greedy_ids(model, src, **ids)
    changed = greedy_ids(model, src, interventions=changes, **ids) if changes else plain
    hits_before, hits_after = right(plain), right(changed)
    before, after = sum(hits_before) / n, sum(hits_after) / n
    got = [vocab.detokenize(vocab.decode(strip_eos(o, vocab.eos_id))) for o in changed]
    failure = typical_failure(examples, got, hits_after)
    return PositionalExperiment(
        task=task.name,
        n=n,
        seed=seed,
        interventions=changes.describe(),
        exact_match=before,
        exact_match_changed=after,
        failure=failure,
        verdict=verdict(before, after, n, changes),
        failures=hits_after.count(False),
    )
