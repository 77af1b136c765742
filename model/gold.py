"""Gold alignments of a demo model's inputs: which source token each output token comes from.

A demo checkpoint's card names its task (model/tasks.py); the task knows the target and the alignment
of an input when it can produce the Example for that exact source (copy and reverse: any string of its
letters; translate: its hand-picked sentences; dates: any date its templates write exactly).
"""

from __future__ import annotations

from functools import lru_cache

from .tasks import TASKS, Example


@lru_cache(maxsize=256)
def _example(task: str, source: str) -> Example | None:
    return TASKS[task].example_for(source) if task in TASKS else None


def gold_example(card: dict, source_text: str) -> Example | None:
    """The task's Example for this source (target text and alignment), or None when the card or task cannot tell."""
    task = card.get("task") if isinstance(card, dict) else None
    return _example(task, source_text) if isinstance(task, str) else None


def gold_alignment(card: dict, source_text: str, output_text: str | None = None) -> list[tuple[int, int]] | None:
    """(source token index, target token index) pairs of the gold alignment, 0-based, or None.

    With output_text (what the model wrote), None too unless it is exactly the gold target: the pairs index
    the gold target's tokens, which are the output's only when the two agree.
    """
    example = gold_example(card, source_text)
    if example is None or (output_text is not None and output_text != example.target):
        return None
    return [tuple(pair) for pair in example.alignment]
