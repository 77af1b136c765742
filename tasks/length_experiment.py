"""The length experiment: exact match against input length, in and beyond the lengths a model was trained on.

The paper chose sinusoids because they "may allow the model to extrapolate to sequence lengths longer than the
ones encountered during training". For a copy / reverse demo this measures it:

    for each length 1 .. 2 x the longest training input: n fresh random strings of exactly that length
    --batched greedy decoding (decoding.greedy_ids, the one core), optionally with every position shifted by k-->
    exact match per length (a curve), one curve per model

Strings of the trained lengths avoid the model's training sources; longer ones were never seen anyway.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from torch import nn

from model.decoding import greedy_ids
from model.interventions import NONE, Interventions
from model.text.tokenizer import Tokenizer

from .evaluate import source_ids
from .registry import get_task
from .tasks import ALPHABET, Example, SymbolTask

LENGTH_SEED = 24  # seed of the experiment's strings (the training and the held-out reports use others)


def symbol_example(task: SymbolTask, source: str) -> Example:
    """The copy / reverse example of `source`, of any length (the task's own sampler stops at its longest)."""
    n = len(source)
    if task.reverse:
        return Example(source, source[::-1], tuple((i, n - 1 - i) for i in range(n)))
    return Example(source, source, tuple((i, i) for i in range(n)))


def examples_by_length(
    task: SymbolTask | str, lengths: Iterable[int], n: int, seed: int = LENGTH_SEED, exclude: Iterable[str] = ()
) -> dict[int, list[Example]]:
    """n distinct random strings of exactly each length (fewer where fewer exist: 20 of length 1), none in exclude
    where enough others exist (a demo trained on 100,000 strings has seen nearly every string of 1-3 letters; those
    lengths fill up with trained strings)."""
    task = get_task(task) if isinstance(task, str) else task
    if not isinstance(task, SymbolTask):
        raise ValueError(f"the length experiment needs a copy or reverse task, got {task.name!r}")
    if not 1 <= n <= 1000:
        raise ValueError(f"n must be from 1 to 1,000 examples per length, got {n}")
    skip = set(exclude)
    out = {}
    for length in lengths:
        if not 1 <= length <= 200:
            raise ValueError(f"lengths must be from 1 to 200, got {length}")
        rng = random.Random(f"length:{task.name}:{seed}:{length}")
        if length <= 3:  # at most 8000 strings: draw from all of them, fresh ones first, then the trained ones
            every = ["".join(t) for t in itertools.product(ALPHABET, repeat=length)]
            rng.shuffle(every)
            chosen = ([s for s in every if s not in skip] + [s for s in every if s in skip])[:n]
        else:
            seen: set[str] = set()
            chosen = []
            while len(chosen) < n:
                s = "".join(rng.choice(ALPHABET) for _ in range(length))
                if s not in skip and s not in seen:
                    seen.add(s)
                    chosen.append(s)
        out[length] = [symbol_example(task, s) for s in chosen]
    return out


@dataclass
class LengthCurve:
    """Exact match of one model at each input length, with every position shifted by `shift` (0: as trained)."""

    lengths: np.ndarray  # (N,) input lengths in characters
    exact_match: np.ndarray  # (N,) fraction 0..1 of that length's examples reversed (or copied) exactly
    examples: np.ndarray  # (N,) examples per length
    shift: int


def length_curve(
    model: nn.Module,
    tokenizer: Tokenizer,
    examples: dict[int, Sequence[Example]],
    shift: int = 0,
    progress: Callable[[int, int], None] | None = None,
    batch_size: int = 240,
) -> LengthCurve:
    """Exact match per length; progress(done, total) after each batch of examples.

    All lengths decode together in batches of similar lengths (batched greedy decoding, the one core), each row
    allowed one token past the longest target (an output still going there is wrong anyway).
    ValueError when the shifted positions run past the model's max_len."""
    changes = Interventions.make(positional="shifted", shift=shift) if shift else NONE
    vocab, lengths = tokenizer.target, sorted(examples)
    rows = [(length, e) for length in lengths for e in examples[length]]  # by length: little padding per batch
    src = source_ids(model, tokenizer, [e.source for _, e in rows])
    steps = max((len(vocab.split(e.target)) for _, e in rows), default=0) + 1
    changes.check(model, [len(s) for s in src] + [steps])
    right: list[bool] = []
    for start in range(0, len(rows), batch_size):
        part = rows[start : start + batch_size]
        outputs = greedy_ids(model, src[start : start + batch_size], max_steps=steps, batch_size=batch_size,
                             interventions=changes)  # fmt: skip
        right += [list(o) == vocab.encode(e.target) + [vocab.eos_id] for (_, e), o in zip(part, outputs, strict=True)]
        if progress is not None:
            progress(min(start + batch_size, len(rows)), len(rows))
    hits = {length: 0 for length in lengths}
    for (length, _), ok in zip(rows, right, strict=True):
        hits[length] += ok
    counts = np.asarray([len(examples[length]) for length in lengths])
    scores = np.asarray([hits[length] for length in lengths]) / np.maximum(counts, 1)
    return LengthCurve(np.asarray(lengths), scores, counts, shift)


LENGTH_EXAMPLES = 50  # fresh strings per length, in the page and in the cards' precomputed curves
CARD_KEY = "length_experiment"


def training_range(card: dict) -> tuple[int, int]:
    """(shortest, longest) training input of a demo, from its card's input_tokens (reverse: (1, 24))."""
    tokens = card.get("input_tokens") or {}
    try:
        return int(tokens["min"]), int(tokens["max"])
    except (KeyError, TypeError, ValueError):
        raise ValueError("the card does not say which input lengths the model was trained on") from None


def card_curve(card: dict, shift: int, n: int = LENGTH_EXAMPLES, seed: int = LENGTH_SEED) -> LengthCurve | None:
    """The curve a card ships for this shift (measured with the same n and seed), or None."""
    entry = card.get(CARD_KEY)
    if not isinstance(entry, dict) or entry.get("examples_per_length") != n or entry.get("seed") != seed:
        return None
    values, lengths = (entry.get("exact_match") or {}).get(str(shift)), entry.get("lengths")
    if not isinstance(values, list) or not isinstance(lengths, list) or len(values) != len(lengths):
        return None
    counts = entry.get("examples") or [n] * len(lengths)
    return LengthCurve(np.asarray(lengths), np.asarray(values, dtype=float), np.asarray(counts), shift)


def measured_curve(card: dict) -> LengthCurve | None:
    """A decoder-only demo's length experiment as its training script measured it (tasks/decoder_only.py: its own
    fresh strings per length, every position as trained), or None: {"lengths": [...], "exact_match": [...],
    "examples": [...]} under the card's CARD_KEY."""
    entry = card.get(CARD_KEY)
    if not isinstance(entry, dict):
        return None
    values, lengths, counts = entry.get("exact_match"), entry.get("lengths"), entry.get("examples")
    if not isinstance(values, list) or not isinstance(lengths, list) or len(values) != len(lengths):
        return None
    counts = counts if isinstance(counts, list) and len(counts) == len(lengths) else [0] * len(lengths)
    return LengthCurve(np.asarray(lengths), np.asarray(values, dtype=float), np.asarray(counts), 0)


def card_entry(curves: Sequence[LengthCurve], measured: str, n: int = LENGTH_EXAMPLES, seed: int = LENGTH_SEED) -> dict:
    """What a card stores for these curves (one per shift, the same lengths): JSON-ready."""
    first = curves[0]
    return {
        "examples_per_length": n,
        "seed": seed,
        "lengths": first.lengths.tolist(),
        "examples": first.examples.tolist(),
        "exact_match": {str(c.shift): [round(float(v), 4) for v in c.exact_match] for c in curves},
        "measured": measured,
    }


def holds_up_to(curve: LengthCurve, at_least: float = 0.5) -> int:
    """The longest length up to which every length reaches `at_least` exact match (0: not even length 1)."""
    longest = 0
    for length, value in zip(curve.lengths, curve.exact_match):
        if value < at_least:
            break
        longest = int(length)
    return longest


def all_below_from(curve: LengthCurve, below: float) -> int:
    """The shortest length from which on every length of the curve stays under `below` (one past the last length
    when the curve ends at or above it)."""
    start = int(curve.lengths.max()) + 1
    for length, value in sorted(zip(curve.lengths, curve.exact_match), reverse=True):
        if value >= below:
            break
        start = int(length)
    return start
