"""A head's role tested by switching it off: the loss on the role's own task with the role's top heads switched off
together, against the same number of heads drawn at random (several seeded draws), in batched passes of the model's
own forward (the per-row ablations of model/interventions/heads_off.py).

The task of a role is next-token prediction on its inputs: for induction and duplicate_token the repeated half of
random sequences repeated twice (from the second token of the second copy on: the tokens an earlier copy predicts),
for the other roles every next token of the corpus. An encoder-only model with a masked-LM head predicts each input
token at its own position; an encoder-decoder model its own greedy output, teacher-forced (scored.prepare).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..interventions import Interventions
from ..network.recording import record
from ..text.inputs import device_of, prepare_sequence, prepare_source, require_eval
from ..text.tokenizer import Tokenizer
from .batched_maps import Item, end_ids, item_tokenizer
from .head_scores import REPEATED

Head = tuple[int, int]  # (layer, head) of one kind


@dataclass
class Scored:
    """One input as a pass reads it: ids (B = 1), and the positions whose next token (decoder) or own token
    (encoder with a masked-LM head) counts."""

    src: list[int]  # the encoder's ids ([] for a decoder-only model)
    inputs: list[int]  # the decoder's ids ([] for an encoder-only model)
    positions: list[int]  # logits rows scored
    targets: list[int]  # the id each scored row should predict


def repeated_start(model: nn.Module, tokenizer: Tokenizer, ids: Sequence[int]) -> int:
    """The position of the second token of the second copy in a sequence made by random_sequences(repeated=True)."""
    before, after = len(tokenizer.source.encode("")), len(end_ids(model, tokenizer))
    half = (len(ids) - before - after) // 2
    return before + half + 1


def scored_input(model: nn.Module, tokenizer: Tokenizer, item: Item, repeated: bool) -> Scored:
    """What one input's pass scores (see the module's docstring)."""
    cfg = model.config
    tok, text = item_tokenizer(model, tokenizer, item)
    if cfg.shape == "decoder-only":
        ids = prepare_sequence(model, tok, text).ids
        start = repeated_start(model, tokenizer, ids) if repeated else 1
        rows = list(range(max(1, start) - 1, len(ids) - 1))
        return Scored([], ids, rows, [ids[p + 1] for p in rows])
    if cfg.shape == "encoder-only":
        ids = prepare_source(model, tok, text).ids
        start = repeated_start(model, tokenizer, ids) - 1 if repeated else 0
        rows = list(range(start, len(ids) - len(end_ids(model, tokenizer))))
        return Scored(ids, [], rows, [ids[p] for p in rows])
    from .scored import prepare

    prep = prepare(model, tok, text, None)
    rows = list(range(len(prep.scored)))
    return Scored(prep.src, prep.inputs, rows, list(prep.scored))


LOGIT_NUMBERS = 2**24  # logits of one block of scored positions (rows x positions x vocabulary: 64 MB of float32)


@torch.no_grad()
def item_losses(
    model: nn.Module,
    tokenizer: Tokenizer,
    item: Item,
    kind: str,
    head_sets: Sequence[Sequence[Head]],
    repeated: bool,
) -> tuple[np.ndarray, np.ndarray, int]:
    """One input's ((R,) summed cross-entropy, (R,) right predictions, scored positions), row r with the heads
    head_sets[r] of `kind` switched off: one batched pass of R rows; the output layer reads the scored positions only,
    a block of them at a time (never R x T x V logits at once)."""
    require_eval(model)
    device = device_of(model)
    R = len(head_sets)
    changes = Interventions().with_rows([frozenset((kind, int(a), int(b)) for a, b in s) for s in head_sets])
    loss_sum, right = np.zeros(R), np.zeros(R)
    s = scored_input(model, tokenizer, item, repeated)
    if not s.positions:
        return loss_sum, right, 0
    with record(model, interventions=changes, keep=False):
        if model.config.shape == "decoder-only":
            hidden = model.decode(torch.tensor([s.inputs], device=device).expand(R, -1), hidden=True)
        elif model.config.shape == "encoder-only":
            hidden, _ = model.encode(torch.tensor([s.src], device=device).expand(R, -1))  # (R, S, D)
        else:
            memory, mask = model.encode(torch.tensor([s.src], device=device).expand(R, -1))
            hidden = model.decode(torch.tensor([s.inputs], device=device).expand(R, -1), memory, mask, hidden=True)
    positions, targets = torch.tensor(s.positions, device=device), torch.tensor(s.targets, device=device)
    size = max(1, LOGIT_NUMBERS // (R * model.logits(hidden[:1, :1]).size(-1)))
    for start in range(0, len(s.positions), size):
        at, want = positions[start : start + size], targets[start : start + size]
        logits = model.logits(hidden[:, at])  # (R, p, V)
        logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
        chosen = logits.gather(-1, want[None, :, None].expand(R, -1, 1))[..., 0]  # (R, p)
        top, best = logits.max(-1)  # (R, p) each: one pass gives the argmax and the log-sum-exp's shift
        total = logits.sub_(top[..., None]).exp_().sum(-1).log_().add_(top)  # (R, p) log-sum-exp, in place
        loss_sum += (total - chosen).double().sum(-1).cpu().numpy()
        right += (best == want).sum(-1).cpu().numpy()
    return loss_sum, right, len(s.positions)


def mean_losses(per_item: Sequence[tuple[np.ndarray, np.ndarray, int]]) -> tuple[np.ndarray, np.ndarray]:
    """((R,) mean cross-entropy, (R,) accuracy) of item_losses' answers, summed in the inputs' order."""
    count = sum(n for _, _, n in per_item)
    if count == 0:
        raise ValueError("none of the inputs has a position to score")
    loss_sum, right = np.zeros_like(per_item[0][0]), np.zeros_like(per_item[0][1])
    for item_loss, item_right, _ in per_item:
        loss_sum += item_loss
        right += item_right
    return loss_sum / count, right / count


def ablated_losses(
    model: nn.Module,
    tokenizer: Tokenizer,
    items: Sequence[Item],
    kind: str,
    head_sets: Sequence[Sequence[Head]],
    repeated: bool,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """((R,) mean cross-entropy, (R,) next-token accuracy) over the scored positions of every input, row r with the
    heads head_sets[r] of `kind` switched off (an empty set: the unchanged model): one batched pass per input
    (item_losses)."""
    if not items:
        raise ValueError("none of the inputs has a position to score")
    per_item = []
    for done, item in enumerate(items, 1):
        per_item.append(item_losses(model, tokenizer, item, kind, head_sets, repeated))
        if progress is not None:
            progress(done, len(items))
    return mean_losses(per_item)


@dataclass
class SwitchOff:
    """A role's top heads switched off together, against as many random heads (draws seeded)."""

    heads: list[Head]  # the top heads by score, switched off together
    loss: float  # the task's loss, nothing switched off
    loss_off: float  # with the top heads off
    random_losses: list[float]  # with as many random heads off, one per draw
    head_losses: list[float]  # with each of the first top heads alone off (same order as heads; at most SINGLES)
    accuracy: float
    accuracy_off: float

    @property
    def effect(self) -> float:
        """Rise of the loss when the top heads go."""
        return self.loss_off - self.loss

    @property
    def random_effects(self) -> list[float]:
        return [x - self.loss for x in self.random_losses]

    @property
    def head_effects(self) -> list[float]:
        return [x - self.loss for x in self.head_losses]

    @property
    def pattern_only(self) -> bool:
        """True when the top heads' effect is within the random heads' spread (not above the largest draw)."""
        return bool(self.random_effects) and self.effect <= max(self.random_effects)

    def to_json(self) -> dict:
        return {
            "heads": [list(h) for h in self.heads],
            "loss": self.loss,
            "loss_off": self.loss_off,
            "random_losses": list(self.random_losses),
            "head_losses": list(self.head_losses),
            "accuracy": self.accuracy,
            "accuracy_off": self.accuracy_off,
            "effect": self.effect,
            "random_effects": self.random_effects,
            "pattern_only": self.pattern_only,
        }


def top_heads(scores: np.ndarray, k: int) -> list[Head]:
    """The k heads of the highest score (ties: the earlier layer, then head), as (layer, head)."""
    order = np.argsort(-scores.reshape(-1), kind="stable")[:k]
    return [(int(i // scores.shape[1]), int(i % scores.shape[1])) for i in order]


def random_heads(
    n_layers: int, n_heads: int, k: int, draws: int, seed: int, exclude: Sequence[Head] = (), avoid: Sequence[Head] = ()
) -> list[list[Head]]:
    """Seeded distinct sets of k heads of the kind, `draws` of them, or every set the pool has when it has fewer (a
    small model's spread is not made of one set drawn again). The pool: the heads in neither `exclude` (this role's
    top heads) nor `avoid` (other roles' top heads: a control must not switch off another part of the same circuit,
    as the previous-token head an induction head reads) while at least k remain, else the heads not in `exclude`
    while at least k remain, else all."""
    rng = random.Random(f"switch-off:{seed}")
    every = [(layer, head) for layer in range(n_layers) for head in range(n_heads)]
    others = [h for h in every if h not in set(exclude)]
    unlabelled = [h for h in others if h not in set(avoid)]
    pool = unlabelled if len(unlabelled) >= k else others if len(others) >= k else every
    if math.comb(len(pool), k) <= draws:
        return [list(c) for c in itertools.combinations(pool, k)]
    out: list[list[Head]] = []
    while len(out) < draws:
        drawn = sorted(rng.sample(pool, k))
        if drawn not in out:
            out.append(drawn)
    return out


SINGLES = 3  # top heads of a role also switched off alone (the grid's opacity)


Layout = dict[str, tuple[list[Head], int, int, int]]  # role -> (top heads, its first row, random rows, alone rows)


def plan_rows(
    scores: dict[str, np.ndarray], k: int = 1, draws: int = 5, seed: int = 0, singles: int = SINGLES, avoid=()
) -> tuple[list[list[Head]], Layout]:
    """The rows of the roles' tests (switch_off_roles): the unchanged row first, then for each role its k top heads
    together, its random sets and its first `singles` top heads alone; and where each role's rows are."""
    sets: list[list[Head]] = [[]]
    layout: Layout = {}
    for role, values in scores.items():
        L, H = values.shape
        kk = max(1, min(k, L * H))
        top = top_heads(values, kk)
        drawn = random_heads(L, H, kk, draws, seed, exclude=top, avoid=avoid)
        alone = [[h] for h in top[: max(0, singles)]]
        layout[role] = (top, len(sets), len(drawn), len(alone))
        sets += [top, *drawn, *alone]
    return sets, layout


def read_rows(layout: Layout, loss: np.ndarray, acc: np.ndarray) -> dict[str, SwitchOff]:
    """{role: its test} from the (R,) losses and accuracies of plan_rows' rows."""
    out = {}
    for role, (top, at, n_drawn, n_alone) in layout.items():
        out[role] = SwitchOff(
            heads=top,
            loss=float(loss[0]),
            loss_off=float(loss[at]),
            random_losses=[float(x) for x in loss[at + 1 : at + 1 + n_drawn]],
            head_losses=[float(x) for x in loss[at + 1 + n_drawn : at + 1 + n_drawn + n_alone]],
            accuracy=float(acc[0]),
            accuracy_off=float(acc[at]),
        )
    return out


def switch_off_roles(
    model: nn.Module,
    tokenizer: Tokenizer,
    scores: dict[str, np.ndarray],
    items: Sequence[Item],
    kind: str,
    repeated: bool,
    k: int = 1,
    draws: int = 5,
    seed: int = 0,
    singles: int = SINGLES,
    avoid: Sequence[Head] = (),
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, SwitchOff]:
    """{role: its test} for roles that share their inputs (`items`, scored as `repeated` says): each role's k top
    heads (by scores[role], (L, H)) switched off together, `draws` random sets of k other heads (random_heads, away
    from `avoid`) and each of the first `singles` top heads alone, against the unchanged model: the rows of one
    batched pass per input (plan_rows), the unchanged row shared by the roles."""
    sets, layout = plan_rows(scores, k, draws, seed, singles, avoid)
    loss, acc = ablated_losses(model, tokenizer, items, kind, sets, repeated, progress)
    return read_rows(layout, loss, acc)


def switch_off(
    model: nn.Module,
    tokenizer: Tokenizer,
    role: str,
    scores: np.ndarray,
    items: Sequence[Item],
    kind: str,
    k: int = 1,
    draws: int = 5,
    seed: int = 0,
    singles: int = SINGLES,
    avoid: Sequence[Head] = (),
    progress: Callable[[int, int], None] | None = None,
) -> SwitchOff:
    """One role's test (switch_off_roles): its k top heads (by `scores`, (L, H)) switched off together on `items`,
    against `draws` random sets of k other heads, and each of the first `singles` top heads alone."""
    tests = switch_off_roles(
        model, tokenizer, {role: scores}, items, kind, role in REPEATED, k, draws, seed, singles, avoid, progress
    )
    return tests[role]
