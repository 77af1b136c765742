"""Training a demo model: the paper's recipe, the batches, and the loop; tasks/train.py is the command around it.

Recipe (section 5 of "Attention Is All You Need"): Adam(beta1=0.9, beta2=0.98, eps=1e-9) with the
warm-up schedule lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), label smoothing 0.1,
dropout 0.1, post-LN blocks.

Data: a fixed training set `dataset(task, train_size, seed)`, visited in shuffled epochs, batched by
similar source length. Held-out examples for the progress bar (and the training snapshots) come from
`held_out(task, n, seed + PROGRESS_SEED_OFFSET, exclude=the training sources)`, so they are fresh.
Same arguments, same seed, same machine -> same weights.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from model.checkpoints.snapshots import snapshot_steps
from model.network.config import TransformerConfig
from model.network.transformer import Transformer, build_model
from model.text.tokenizer import Tokenizer, Vocab

from .evaluate import Evaluation, evaluate, pad_batch
from .tasks import Example, Task, dataset, held_out

PROGRESS_SEED_OFFSET = 2  # held_out seed of the small set shown on the progress bar: seed + 2
SNAPSHOT_EXAMPLES = 100  # held-out examples that score each training snapshot when the progress set is off


# ----------------------------------------------------------------------------------- the recipe


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """The paper's learning rate at optimizer step `step` (counted from 1): linear warm-up for
    `warmup` steps to its peak at step == warmup, then decay with step^-0.5."""
    step = max(step, 1)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def make_optimizer(
    model: nn.Module, warmup: int, factor: float
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """Adam(0.9, 0.98, eps 1e-9) whose lr follows noam_lr: update k (from 1) uses noam_lr(k)."""
    params = list({id(p): p for p in model.parameters()}.values())  # tied weights once
    optimizer = torch.optim.Adam(params, lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    d_model = model.config.d_model
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: noam_lr(i + 1, d_model, warmup, factor))
    return optimizer, scheduler


def sequence_loss(logits: torch.Tensor, targets: torch.Tensor, pad_id: int, label_smoothing: float) -> torch.Tensor:
    """Mean label-smoothed cross entropy over the non-pad target tokens.

    logits (B, T, V), targets (B, T). With smoothing eps the target distribution is (1 - eps) on the
    gold token plus eps / V on every token (PyTorch's definition).
    """
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=pad_id, label_smoothing=label_smoothing
    )


# ----------------------------------------------------------------------------------- data


def build_tokenizer(task: Task) -> Tokenizer:
    """One vocabulary per side from the task's symbols; one shared object when the sets are equal."""
    source = Vocab.build(task.source_symbols(), level=task.source_level, lowercase=task.lowercase)
    if task.source_symbols() == task.target_symbols() and task.source_level == task.target_level and not task.lowercase:
        return Tokenizer(source, source)
    return Tokenizer(source, Vocab.build(task.target_symbols(), level=task.target_level))


@dataclass
class Batch:
    src: torch.Tensor  # (B, S) source ids + </s>, right-padded
    tgt_in: torch.Tensor  # (B, T) <s> y_1 .. y_n, right-padded
    tgt_out: torch.Tensor  # (B, T) y_1 .. y_n </s>, right-padded
    tokens: int  # non-pad target tokens


def encode_examples(examples: Sequence[Example], tokenizer: Tokenizer) -> list[tuple[list[int], list[int]]]:
    """(source ids + </s>, target ids) per example."""
    src, tgt = tokenizer.source, tokenizer.target
    return [(src.encode(e.source) + [src.eos_id], tgt.encode(e.target)) for e in examples]


def make_batch(
    pairs: Sequence[tuple[list[int], list[int]]], bos_id: int = 1, eos_id: int = 2, pad_id: int = 0
) -> Batch:
    src = pad_batch([s for s, _ in pairs], pad_id)
    tgt_in = pad_batch([[bos_id] + t for _, t in pairs], pad_id)
    tgt_out = pad_batch([t + [eos_id] for _, t in pairs], pad_id)
    return Batch(src, tgt_in, tgt_out, int((tgt_out != pad_id).sum()))


def batches(
    pairs: Sequence[tuple[list[int], list[int]]], batch_size: int, rng: random.Random, bucket: int = 50
) -> Iterator[list[int]]:
    """Endless shuffled epochs of index batches. With bucket > 1 each pool of `bucket` batches is
    sorted by length first, so a batch holds sequences of similar length (less padding); bucket=1
    gives batches of random lengths."""
    pool = batch_size * max(1, bucket)
    while True:
        order = list(range(len(pairs)))
        rng.shuffle(order)
        for start in range(0, len(order), pool):
            chunk = sorted(order[start : start + pool], key=lambda i: (len(pairs[i][0]), len(pairs[i][1])))
            groups = [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
            rng.shuffle(groups)
            yield from groups


# ----------------------------------------------------------------------------------- training


@dataclass
class TrainResult:
    model: Transformer  # in eval mode
    tokenizer: Tokenizer
    train_sources: set[str]
    steps: int  # optimizer steps taken
    seconds: float  # wall time of the training loop (progress evaluations included)
    stopped_early: bool
    losses: list[float] = field(default_factory=list)  # the training loss of every step
    progress: list[tuple[int, float]] = field(default_factory=list)  # (step, held-out exact match)
    averaged: int = 1  # how many snapshots the final weights average
    snapshot_examples: int = 0  # size of the held-out set that scored the training snapshots (--snapshots)


def train(
    task: Task,
    config: TransformerConfig,
    tokenizer: Tokenizer,
    *,
    steps: int,
    batch_size: int,
    warmup: int,
    lr_factor: float,
    train_size: int,
    seed: int = 0,
    label_smoothing: float = 0.1,
    eval_every: int = 250,
    eval_examples: int = 200,
    max_minutes: float | None = None,
    progress: bool = True,
    average: int = 1,
    average_every: int = 250,
    bucket: int = 50,
    snapshots: int = 0,
    on_snapshot: Callable[[int, Transformer, Evaluation], None] | None = None,
) -> TrainResult:
    """Train a fresh model; deterministic for a given seed and thread count.

    average > 1: the returned weights are the mean of the last `average` snapshots taken every
    `average_every` steps (the final step included), as the paper averages its last 5 checkpoints.
    snapshots > 0: at `snapshot_steps(steps, snapshots)` (step 0 before any update included) the model is
    scored on the progress set (or SNAPSHOT_EXAMPLES fresh held-out examples), exact match and alignment, and
    handed to on_snapshot(step, model in eval mode, scores); the run's weights do not depend on it.
    """
    rng = random.Random(f"train:{task.name}:{seed}")
    examples = dataset(task, train_size, seed)
    train_sources = {e.source for e in examples}
    pairs = encode_examples(examples, tokenizer)
    probe = held_out(task, eval_examples, seed + PROGRESS_SEED_OFFSET, exclude=train_sources) if eval_examples else []

    model = build_model(config, seed=seed).train()
    optimizer, scheduler = make_optimizer(model, warmup, lr_factor)
    stream = batches(pairs, batch_size, rng, bucket)
    result = TrainResult(model, tokenizer, train_sources, 0, 0.0, False)
    snapshots_to_average: list[dict[str, torch.Tensor]] = []
    snapshot_at = set(snapshot_steps(steps, snapshots)) if snapshots else set()
    snapshot_set = probe or (
        held_out(task, SNAPSHOT_EXAMPLES, seed + PROGRESS_SEED_OFFSET, exclude=train_sources) if snapshot_at else []
    )
    result.snapshot_examples = len(snapshot_set) if snapshot_at else 0

    def take_snapshot(step: int) -> None:
        if step in snapshot_at and on_snapshot is not None:
            model.eval()
            on_snapshot(step, model, evaluate(model, tokenizer, snapshot_set, alignment=True))
            model.train()

    from tqdm import tqdm  # only the command needs it

    bar = tqdm(total=steps, desc=f"train {task.name}", unit="step", disable=not progress, dynamic_ncols=True)
    start = time.perf_counter()
    smooth = None
    accuracy = float("nan")
    take_snapshot(0)
    for step in range(1, steps + 1):
        if max_minutes is not None and time.perf_counter() - start > 60 * max_minutes:
            result.stopped_early = True
            break
        batch = make_batch([pairs[i] for i in next(stream)], config.bos_id, config.eos_id, config.pad_id)
        logits = model(batch.src, batch.tgt_in)  # (B, T, V)
        loss = sequence_loss(logits, batch.tgt_out, config.pad_id, label_smoothing)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        result.steps = step
        if average > 1 and (steps - step) % average_every == 0 and steps - step < average * average_every:
            snapshots_to_average.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        value = loss.item()
        result.losses.append(value)
        smooth = value if smooth is None else 0.95 * smooth + 0.05 * value
        if probe and (step % eval_every == 0 or step == steps):
            model.eval()
            accuracy = evaluate(model, tokenizer, probe, alignment=False).exact_match
            model.train()
            result.progress.append((step, accuracy))
        take_snapshot(step)
        bar.set_postfix(
            loss=f"{smooth:.3f}", held_out=f"{accuracy:.1%}", lr=f"{scheduler.get_last_lr()[0]:.2e}", refresh=False
        )
        bar.update(1)
    bar.close()
    if len(snapshots_to_average) > 1 and not result.stopped_early:
        model.load_state_dict(average_weights(snapshots_to_average))
    result.averaged = len(snapshots_to_average) if len(snapshots_to_average) > 1 and not result.stopped_early else 1
    result.seconds = time.perf_counter() - start
    model.eval()
    return result


def average_weights(snapshots: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The element-wise mean of state dicts with the same keys and shapes."""
    return {k: torch.stack([s[k].float() for s in snapshots]).mean(0).to(snapshots[0][k].dtype) for k in snapshots[0]}
