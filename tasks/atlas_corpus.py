"""What the head atlas reads for a demo model: a corpus from its task's generator (the library takes texts and knows
no task), and cross-attention's agreement with the task's gold alignment.

    default_corpus(card, n, seed) -> list[str] | None     None: no task (the atlas reads random tokens then)
    cross_alignment(model, tokenizer, card, n, seed) -> (L, H) | None
"""

from __future__ import annotations

import random

import numpy as np
from torch import nn

from model.analysis.capture import capture
from model.analysis.head_scores import alignment_scores
from model.text.tokenizer import Tokenizer

from .registry import TASKS

CORPUS_TEXTS = 64  # texts of a demo's default corpus


def default_corpus(card: dict, n: int = CORPUS_TEXTS, seed: int = 0) -> list[str] | None:
    """n texts as the demo's model read them in training (seeded): its task's sources, or for a decoder-only demo the
    whole sequence `source=target`; None when the card names no task of this project."""
    task = TASKS.get(str(card.get("task", ""))) if isinstance(card, dict) else None
    if task is None:
        return None
    rng = random.Random(f"atlas-corpus:{task.name}:{seed}")
    examples = [task.sample(rng) for _ in range(n)]
    if card.get("shape") == "decoder-only" and task.name != "induction":
        from .decoder_only import SEP

        return [e.source + SEP + e.target for e in examples]
    return [e.source for e in examples]


def cross_alignment(
    model: nn.Module, tokenizer: Tokenizer, card: dict, n: int = CORPUS_TEXTS, seed: int = 0
) -> np.ndarray | None:
    """(L, H) the mean over n of the task's examples (read with their gold target) of each cross-attention head's
    (attention x gold links).sum() / attention.sum(); None without cross-attention or a task with alignments."""
    task = TASKS.get(str(card.get("task", ""))) if isinstance(card, dict) else None
    if task is None or "cross" not in model.config.attention_kinds:
        return None
    rng = random.Random(f"atlas-alignment:{task.name}:{seed}")
    scores = []
    for _ in range(n):
        example = task.sample(rng)
        if not example.alignment:
            continue
        cap = capture(model, tokenizer, example.source, example.target)
        scores.append(alignment_scores(cap.cross, example.alignment))
    return np.mean(scores, axis=0) if scores else None
