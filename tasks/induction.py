"""Induction heads forming (Olsson et al. 2022, "In-context Learning and Induction Heads"): a decoder-only,
two-layer, attention-only Transformer (no feed-forward layers) trained on random letters repeated twice.

The first copy is random: nothing predicts it (chance is 1 in 52). The second copy is predictable only by looking
back: find the earlier occurrence of the current letter and copy the letter after it. Two layers can do that
together: a layer-0 head writes "my previous letter was x" into each position (a previous-token head), and a layer-1
head looks for the position whose previous letter is the current one and copies its letter (the induction head).

    python -m model.train --task induction --out runs/induction --snapshots 8

Training (tasks/induction_train.py) and the measurements of the card (`measure`, here) read fresh sequences drawn
from a seed; the switched-off heads go through the library's interventions, the scores through model.head_scores.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from i18n import M_
from model.analysis.head_scores import detection_pattern, head_scores, perfect_score
from model.interventions import Interventions
from model.network.recording import record
from model.text.tokenizer import Tokenizer, Vocab

from .tasks import Example, Task

LETTERS = string.ascii_lowercase + string.ascii_uppercase  # 52 symbols
LENGTHS = (15, 25)  # letters in one copy (inclusive)


class InductionTask(Task):
    """Random letters repeated twice; the target is empty (a decoder-only model continues the text itself)."""

    name = "induction"
    source_level = target_level = "char"
    description = M_(
        "Random letters repeated twice: a two-layer attention-only model learns to continue the second copy by "
        "looking back at the first (induction heads)."
    )

    def sample(self, rng: random.Random) -> Example:
        half = "".join(rng.choice(LETTERS) for _ in range(rng.randint(*LENGTHS)))
        return Example(half + half, "", ())

    def source_symbols(self) -> list[str]:
        return sorted(LETTERS)

    def target_symbols(self) -> list[str]:
        return sorted(LETTERS)

    def examples(self) -> list[str]:
        return ["qwErTyuIopAsdfgqwErTyuIopAsdfg", "TheCatSatOnTheMatTheCatSatOnTheMat", "abcdefghijklmnopabcdefghijklmnop",
                "ZyXwVuTsRqPoNmLZyXwVuTsRqPoNmL"]  # fmt: skip


def tokenizer() -> Tokenizer:
    vocab = Vocab.build(LETTERS, level="char")
    return Tokenizer(vocab, vocab)


def fresh_sequences(vocab: Vocab, n: int, seed: int) -> list[list[int]]:
    """n sequences of random letters (LENGTHS) repeated twice, as ids, from this seed."""
    rng = random.Random(f"induction:{seed}")
    return [vocab.encode(InductionTask().sample(rng).source) for _ in range(n)]


@torch.no_grad()
def halves_accuracy(model: nn.Module, seqs: Sequence[Sequence[int]], ablate=()) -> tuple[float, float]:
    """(next-token accuracy on the first copy, on the repeated half): the first copy from its second letter, the
    second from its second letter on (its first letter is as random as any of the first copy). ablate: heads
    (kind, layer, head) switched off."""
    changes = Interventions.make(ablate=list(ablate))
    right, total = np.zeros(2), np.zeros(2)
    for ids in seqs:
        half = len(ids) // 2
        x = torch.tensor([ids])
        with record(model, interventions=changes, keep=False):
            predicted = model.decode(x)[0].argmax(-1).tolist()  # (T,) the token after each position
        for part, rows in enumerate((range(0, half - 1), range(half, len(ids) - 1))):
            right[part] += sum(predicted[p] == ids[p + 1] for p in rows)
            total[part] += len(rows)
    return float(right[0] / total[0]), float(right[1] / total[1])


def measure(model: nn.Module, tok: Tokenizer, n: int = 200, seed: int = 1000) -> dict:
    """The card's numbers on n fresh sequences: induction and previous-token scores per head (and as a share of a
    perfect head's), accuracy on both halves, and the repeated half's accuracy with the best induction head
    switched off, or the other layer's previous-token head (the circuit's first half), or a lowest-scoring head of the
    other layer apart from that one."""
    seqs = fresh_sequences(tok.source, n, seed)
    induction = head_scores(model, tok, "induction", texts=seqs)
    previous = head_scores(model, tok, "previous_token", texts=seqs)
    perfect = float(np.mean([perfect_score("induction", s) for s in seqs]))
    best = np.unravel_index(int(np.argmax(induction)), induction.shape)
    other = 1 - int(best[0]) if induction.shape[0] == 2 else int(best[0]) - 1
    reader = int(np.argmax(previous[other]))  # the other layer's previous-token head (what the induction head reads)
    rest = [h for h in range(induction.shape[1]) if h != reader] or [reader]
    low = min(rest, key=lambda h: induction[other, h])  # a lowest-scoring head of the other layer, outside the circuit
    first, repeated = halves_accuracy(model, seqs)
    _, without_best = halves_accuracy(model, seqs, [("decoder_self", int(best[0]), int(best[1]))])
    _, without_reader = halves_accuracy(model, seqs, [("decoder_self", other, reader)])
    _, without_low = halves_accuracy(model, seqs, [("decoder_self", other, low)])
    return {
        "sequences": n,
        "seed": seed,
        "induction_scores": np.round(induction, 4).tolist(),
        "previous_token_scores": np.round(previous, 4).tolist(),
        "perfect_induction_score": round(perfect, 4),
        "best_induction_head": [int(best[0]), int(best[1])],
        "best_induction_share": round(float(induction[best]) / perfect, 4),
        "accuracy_first_half": round(first, 4),
        "accuracy_repeated_half": round(repeated, 4),
        "chance": round(1 / len(LETTERS), 4),
        "repeated_half_without_best": round(without_best, 4),
        "previous_token_head": [other, reader],
        "repeated_half_without_previous_token_head": round(without_reader, 4),
        "lowest_other_head": [other, low],
        "repeated_half_without_lowest_other": round(without_low, 4),
    }


def best_share(model: nn.Module, tok: Tokenizer, seqs: Sequence[Sequence[int]]) -> tuple[float, list[float]]:
    """(the best induction head's score as a share of a perfect head's, each layer's best previous-token score) on
    these sequences: what each training snapshot records."""
    induction = head_scores(model, tok, "induction", texts=seqs)
    previous = head_scores(model, tok, "previous_token", texts=seqs)
    perfect = float(np.mean([(detection_pattern("induction", s).sum(-1) > 0).mean() for s in seqs]))
    return float(induction.max() / perfect), [round(float(x), 4) for x in previous.max(axis=1)]
