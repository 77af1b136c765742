"""Gold alignments of a demo model's inputs: which source token each output token comes from.

A demo checkpoint's card names its task (tasks/tasks.py); the task knows the target and the alignment
of an input when it can produce the Example for that exact source (copy and reverse: any string of its
letters; translate: its hand-picked sentences; dates: any date its templates write exactly).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from .registry import TASKS
from .tasks import Example


@lru_cache(maxsize=256)
def _example(task: str, source: str) -> Example | None:
    return TASKS[task].example_for(source) if task in TASKS else None


def gold_example(card: dict, source_text: str) -> Example | None:
    """The task's Example for this source (target text and alignment), or None when the card or task cannot tell."""
    task = card.get("task") if isinstance(card, dict) else None
    if not isinstance(task, str):
        return None
    if task in TASKS and TASKS[task].lowercase:  # its vocabulary lower-cases typed text: "Je suis" reads as "je suis"
        source_text = source_text.lower()
    if card.get("shape") == "decoder-only":  # a decoder-only demo reads the prompt `source=` (tasks/decoder_only.py)
        from .decoder_only import SEP

        if not source_text.endswith(SEP):
            return None
        source_text = source_text[: -len(SEP)]  # the source's tokens come first: the alignment's indices hold
    return _example(task, source_text)


def gold_alignment(card: dict, source_text: str, output_text: str | None = None) -> list[tuple[int, int]] | None:
    """(source token index, target token index) pairs of the gold alignment, 0-based, or None.

    With output_text (what the model wrote), None too unless it is exactly the gold target: the pairs index
    the gold target's tokens, which are the output's only when the two agree.
    """
    example = gold_example(card, source_text)
    if example is None or (output_text is not None and output_text != example.target):
        return None
    return [tuple(pair) for pair in example.alignment]


def alignment_share(cross: np.ndarray, pairs: Sequence[tuple[int, int]]) -> list[float]:
    """Per decoder layer, the cards' alignment measure (tasks/evaluate.py) on one input read with its gold target.

    cross: (L, H, T, S) cross-attention with the decoder input <s> + the gold target, so that row j is the
    position that writes target token j. Of the target tokens with a gold link, the share whose head-averaged
    row peaks on a source token linked to them. [] when no target token has a link.
    """
    links: dict[int, set[int]] = {}
    for s, t in pairs:
        links.setdefault(int(t), set()).add(int(s))
    rows = [j for j in sorted(links) if j < cross.shape[2]]
    if not rows:
        return []
    peaks = cross.mean(axis=1).argmax(axis=-1)  # (L, T): head average, then the source position it peaks on
    return [sum(int(peaks[layer, j]) in links[j] for j in rows) / len(rows) for layer in range(cross.shape[0])]


def disagreements(weights: np.ndarray, pairs: Sequence[tuple[int, int]]) -> list[tuple[int, int, list[int]]]:
    """Where one attention map and the gold alignment disagree: (row, source the row peaks on, gold sources).

    weights: (T, S) one head or the head average, rows = the decoder positions, row j writing target token j (as
    in alignment_share); only rows with a gold link count, in order. The worked example's puzzle: on fr_en "je
    suis étudiant", the last layer's row that writes "i" peaks on "suis" while the gold link is "je"."""
    links: dict[int, set[int]] = {}
    for s, t in pairs:
        links.setdefault(int(t), set()).add(int(s))
    peaks = weights.argmax(axis=-1)
    return [
        (j, int(peaks[j]), sorted(links[j]))
        for j in sorted(links)
        if j < weights.shape[0] and int(peaks[j]) not in links[j]
    ]
