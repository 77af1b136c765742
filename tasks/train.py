"""Train a demo model on one of the built-in tasks: the paper's recipe, scaled down to a laptop CPU.

    python -m model.train --task reverse --out runs/reverse
    python -m model.train --task reverse --out checkpoints/reverse --overwrite   # replace the shipped one

The folder given by --out must be new or empty; an existing checkpoint (the shipped ones included) is
replaced only with --overwrite. The checkpoint is saved as soon as training ends, before the report
(held-out exact match and attention alignment) runs; the report then completes the card.

Recipe (section 5 of "Attention Is All You Need"): Adam(beta1=0.9, beta2=0.98, eps=1e-9) with the
warm-up schedule lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), label smoothing 0.1,
dropout 0.1, post-LN blocks. Each task has defaults (TASK_DEFAULTS) that reproduce the shipped
checkpoint exactly; every one of them can be overridden on the command line.

Data: a fixed training set `dataset(task, train_size, seed)`, visited in shuffled epochs, batched by
similar source length. Held-out examples come from `held_out(task, n, seed + offset, exclude=the
training sources)`, so they are fresh: a progress set (shown on the bar) and the 500 examples of the
final report. Same command, same seed, same machine -> same weights.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from model.checkpoints.checkpoint import save_checkpoint
from model.checkpoints.snapshots import FOLDER as SNAPSHOT_FOLDER
from model.checkpoints.snapshots import INDEX as SNAPSHOT_INDEX
from model.checkpoints.snapshots import save_snapshot, snapshot_steps, write_index
from model.network.config import POSITIONAL_KINDS, PRESETS, TransformerConfig
from model.network.transformer import Transformer, build_model
from model.text.tokenizer import Tokenizer, Vocab

from .evaluate import Evaluation, evaluate, pad_batch
from .registry import TASKS, get_task
from .tasks import Example, Task, dataset, held_out, input_range

REPORT_EXAMPLES = 500  # held-out examples of the final report
REPORT_SEED_OFFSET = 1  # held_out seed of the final report: seed + 1
PROGRESS_SEED_OFFSET = 2  # held_out seed of the small set shown on the progress bar: seed + 2
SNAPSHOT_EXAMPLES = 100  # held-out examples that score each training snapshot when the progress set is off
# (the tests of the shipped models use yet another seed, so their examples are fresh to the card too)

# Per-task defaults: running `python -m model.train --task T --out checkpoints/T` with nothing else
# reproduces the shipped checkpoint. "model" holds overrides of the preset.
TASK_DEFAULTS: dict[str, dict[str, Any]] = {
    "copy": dict(
        preset="demo", model={}, steps=2000, batch_size=64, warmup=400, lr_factor=0.5, train_size=50_000, bucket=1
    ),
    # reverse needs exact position arithmetic: wider (d_model 128), no dropout, longer, and the paper's
    # average of the last 5 checkpoints; with dropout 0.1 and d_model 64 it stalls near 94% exact match.
    "reverse": dict(
        preset="demo",
        model={"d_model": 128, "dropout": 0.0},
        steps=7000,
        batch_size=64,
        warmup=400,
        lr_factor=0.7,
        train_size=100_000,
        average=5,
        eval_examples=100,
    ),
    "dates": dict(
        preset="demo", model={}, steps=3000, batch_size=64, warmup=400, lr_factor=0.5, train_size=100_000, average=5
    ),
    "translate": dict(
        preset="demo", model={}, steps=4000, batch_size=64, warmup=400, lr_factor=1.0, train_size=100_000
    ),
    "fr_en": dict(
        preset="demo", model={}, steps=8000, batch_size=64, warmup=400, lr_factor=1.0, train_size=100_000, average=5
    ),  # translate's, longer and averaged: more words and forms  # fmt: skip
}
COMMON_DEFAULTS: dict[str, Any] = dict(
    seed=0,
    label_smoothing=0.1,
    eval_every=250,
    eval_examples=200,
    max_minutes=15.0,
    threads=1,
    average=1,
    average_every=250,
    bucket=50,
)


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


# ----------------------------------------------------------------------------------- the command


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def config_summary(config: TransformerConfig) -> dict[str, Any]:
    keys = (
        "d_model", "n_heads", "d_ff", "n_encoder_layers", "n_decoder_layers", "dropout", "norm_first",
        "positional", "share_embeddings", "tie_generator", "src_vocab_size", "tgt_vocab_size", "max_len",
    )  # fmt: skip
    return {k: getattr(config, k) for k in keys}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m model.train",
        description="Train a demo Transformer on a built-in task and save it as a checkpoint with a card.",
    )
    p.add_argument("--task", required=True, choices=sorted(TASKS))
    p.add_argument("--out", required=True, help="checkpoint folder to write, new or empty (e.g. runs/reverse)")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the checkpoint already in --out (e.g. a shipped one in checkpoints/)",
    )
    g = p.add_argument_group("model (defaults: the task's shipped configuration)")
    g.add_argument("--preset", choices=sorted(PRESETS))
    g.add_argument("--d-model", type=int)
    g.add_argument("--heads", type=int)
    g.add_argument("--d-ff", type=int)
    g.add_argument("--encoder-layers", type=int)
    g.add_argument("--decoder-layers", type=int)
    g.add_argument("--dropout", type=float)
    g.add_argument(
        "--positional",
        choices=POSITIONAL_KINDS,
        help="sinusoidal (the paper), learned (a table), none, or inside attention: rope, alibi, relative (T5)",
    )
    g.add_argument("--pe-base", type=float, help="base of the sinusoid wavelengths (the paper: 10000)")
    g.add_argument(
        "--share",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="one embedding table for source, target and output projection (default: when both sides use the same symbols)",
    )
    g.add_argument("--pre-ln", action="store_true", default=None, help="pre-LN blocks instead of the paper's post-LN")
    g = p.add_argument_group("training (defaults: the task's shipped recipe)")
    g.add_argument("--steps", type=int)
    g.add_argument("--batch-size", type=int)
    g.add_argument("--warmup", type=int, help="warm-up steps of the learning-rate schedule")
    g.add_argument("--lr-factor", type=float, help="factor of the learning-rate schedule")
    g.add_argument("--label-smoothing", type=float)
    g.add_argument("--train-size", type=int, help="examples in the fixed training set")
    g.add_argument("--seed", type=int)
    g.add_argument("--bucket", type=int, help="batches per length-sorted pool (1: batches of mixed lengths)")
    g.add_argument("--average", type=int, help="average the weights of the last N snapshots (the paper: 5)")
    g.add_argument("--average-every", type=int, help="steps between the averaged snapshots")
    g = p.add_argument_group("reporting and limits")
    g.add_argument("--eval-every", type=int, help="steps between held-out evaluations on the progress bar")
    g.add_argument("--eval-examples", type=int, help="held-out examples evaluated on the progress bar (0: none)")
    g.add_argument("--report-examples", type=int, default=REPORT_EXAMPLES, help="held-out examples of the final report")
    g.add_argument("--max-minutes", type=float, help="stop training after this many minutes (a safety guard)")
    g.add_argument("--threads", type=int, help="torch CPU threads")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.add_argument(
        "--snapshots",
        type=int,
        default=0,
        help="also save N float16 snapshots along the run (step 0, then doubling) in OUT/snapshots/, each scored "
        "on a small held-out set; they do not change the trained weights",
    )
    return p.parse_args(argv)


def resolve(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """(recipe, model overrides): the task's defaults with the command-line flags applied."""
    recipe = {**COMMON_DEFAULTS, **TASK_DEFAULTS[args.task]}
    model = dict(recipe.pop("model"))
    for name in ("preset", "steps", "batch_size", "warmup", "lr_factor", "label_smoothing", "train_size", "seed",
                 "eval_every", "eval_examples", "max_minutes", "threads", "average", "average_every", "bucket"):  # fmt: skip
        if getattr(args, name) is not None:
            recipe[name] = getattr(args, name)
    flags = dict(d_model=args.d_model, n_heads=args.heads, d_ff=args.d_ff, n_encoder_layers=args.encoder_layers,
                 n_decoder_layers=args.decoder_layers, dropout=args.dropout, norm_first=args.pre_ln,
                 pe_base=args.pe_base, positional=args.positional, share_embeddings=args.share,
                 tie_generator=args.share)  # fmt: skip
    model.update({k: v for k, v in flags.items() if v is not None})
    return recipe, model


def make_config(preset: str, overrides: dict[str, Any], tokenizer: Tokenizer) -> TransformerConfig:
    """The preset with the overrides; one embedding table (also the output projection) when the
    vocabulary is shared."""
    shared = dict(share_embeddings=tokenizer.shared, tie_generator=tokenizer.shared)
    return TransformerConfig.preset(
        preset, src_vocab_size=len(tokenizer.source), tgt_vocab_size=len(tokenizer.target), **{**shared, **overrides}
    )


def check_out(folder: Path, overwrite: bool) -> None:
    """Refuse to write into an existing non-empty folder (or onto a file) unless overwrite is asked for."""
    if folder.exists() and not folder.is_dir():
        raise SystemExit(f"--out {folder} is a file, not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not overwrite:
        raise SystemExit(
            f"--out {folder} already holds files (a checkpoint?); choose a new folder, or add --overwrite "
            f"to replace it on purpose"
        )


def report(model: Transformer, tokenizer: Tokenizer, examples: Sequence[Example]) -> dict[str, Any]:
    """The card's held-out fields: exact match and the attention measure on `examples`."""
    scores = evaluate(model, tokenizer, examples, alignment=True)
    return {
        "held_out_exact_match": round(scores.exact_match, 4),
        "held_out_examples": len(examples),
        "alignment": {
            "per_layer": [round(a, 4) for a in scores.alignment or []],
            "best": round(max(scores.alignment or [0.0]), 4),
            "tokens": scores.counted,
            "measure": "share of output tokens whose head-averaged cross-attention row (the decoder position "
            "that produced the token, on the model's own greedy output) peaks on a gold-aligned source token",
        },
    }


def recorded_command(argv: Sequence[str]) -> str:
    """The command for the card: the arguments that decide the weights (not --overwrite, --snapshots, nor the
    --max-minutes guard)."""
    kept, skip = [], False
    for a in argv:
        if skip or a == "--overwrite" or a.startswith(("--snapshots=", "--max-minutes=")):
            skip = False
            continue
        if a in ("--snapshots", "--max-minutes"):
            skip = True
            continue
        kept.append(a)
    return "python -m model.train " + shlex.join(kept)


def snapshot_writer(out: Path, tokenizer: Tokenizer, entries: list[dict[str, Any]]):
    """on_snapshot for train(): each snapshot saved under out/snapshots/ as it is taken (a run stopped later keeps
    the ones written); the index is rewritten after each. Earlier snapshots of an overwritten run are removed."""
    import shutil

    root = out / SNAPSHOT_FOLDER
    if root.is_dir():
        for old in root.glob("step-*"):
            if old.is_dir():
                shutil.rmtree(old)
        (root / SNAPSHOT_INDEX).unlink(missing_ok=True)

    def write(step: int, model: Transformer, scores: Evaluation) -> None:
        entry = save_snapshot(model, tokenizer, root, step, {
            "exact_match": round(scores.exact_match, 4),
            "alignment": [round(a, 4) for a in scores.alignment or []],
        })  # fmt: skip
        entries.append(entry)
        write_index(root, entries, examples=len(scores.outputs))

    return write


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the command; returns the card it wrote."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    check_out(Path(args.out), args.overwrite)
    if not 0 <= args.snapshots <= 64:
        raise SystemExit("--snapshots takes 0 to 64 snapshots")
    wall = time.perf_counter()
    recipe, overrides = resolve(args)
    torch.set_num_threads(recipe["threads"])
    task = get_task(args.task)
    tokenizer = build_tokenizer(task)
    config = make_config(recipe["preset"], overrides, tokenizer)
    result = train(
        task,
        config,
        tokenizer,
        steps=recipe["steps"],
        batch_size=recipe["batch_size"],
        warmup=recipe["warmup"],
        lr_factor=recipe["lr_factor"],
        train_size=recipe["train_size"],
        seed=recipe["seed"],
        label_smoothing=recipe["label_smoothing"],
        eval_every=recipe["eval_every"],
        eval_examples=recipe["eval_examples"],
        max_minutes=recipe["max_minutes"],
        progress=not args.no_progress,
        average=recipe["average"],
        average_every=recipe["average_every"],
        bucket=recipe["bucket"],
        snapshots=args.snapshots,
        on_snapshot=snapshot_writer(Path(args.out), tokenizer, entries := []) if args.snapshots else None,
    )
    if result.stopped_early:
        print(
            f"STOPPED EARLY: --max-minutes {recipe['max_minutes']:g} reached after {result.steps} of "
            f"{recipe['steps']} steps; this checkpoint is not the reproducible one of the full recipe.",
            file=sys.stderr,
        )
    model = result.model
    n_params = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    report_seed = recipe["seed"] + REPORT_SEED_OFFSET
    card = {
        "task": task.name,
        "description": task.description,
        "config": config_summary(config),
        "command": recorded_command(argv),
        "held_out_seed": report_seed,
        "training_seconds": round(result.seconds, 1),
        "steps": result.steps,
        "stopped_early": result.stopped_early,
        "seed": recipe["seed"],
        "parameters": n_params,
        "trained_on": f"{os.cpu_count()}-core CPU ({cpu_name()}), {torch.get_num_threads()} threads, torch {torch.__version__}",
        "recipe": {
            "optimizer": "Adam(betas=(0.9, 0.98), eps=1e-9)",
            "schedule": "lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)",
            "lr_factor": recipe["lr_factor"],
            "warmup": recipe["warmup"],
            "batch_size": recipe["batch_size"],
            "label_smoothing": recipe["label_smoothing"],
            "train_size": recipe["train_size"],
            "averaged_snapshots": result.averaged,
            "average_every": recipe["average_every"],
            "bucket": recipe["bucket"],
            "train_data": f"dataset(task, {recipe['train_size']}, seed={recipe['seed']}) in shuffled epochs; "
            f"held-out examples exclude its sources",
            "final_loss": round(sum(result.losses[-50:]) / max(1, len(result.losses[-50:])), 4),
        },
        "examples": task.examples(),
        "input_tokens": input_range(task, result.train_sources),
    }
    if args.snapshots:
        card["snapshots"] = {
            "folder": SNAPSHOT_FOLDER,
            "steps": [e["step"] for e in entries],
            "held_out_examples": result.snapshot_examples,
            "held_out_seed": recipe["seed"] + PROGRESS_SEED_OFFSET,
            "precision": "float16",
            "command": recorded_command(argv) + f" --snapshots {args.snapshots}",
        }
        write_index(Path(args.out) / SNAPSHOT_FOLDER, entries, task=task.name, total_steps=result.steps,
                    examples=result.snapshot_examples, held_out_seed=recipe["seed"] + PROGRESS_SEED_OFFSET,
                    precision="float16", command=card["snapshots"]["command"])  # fmt: skip
    # Save first: whatever runs after training may fail, the trained weights must not be lost.
    folder = save_checkpoint(model, tokenizer, args.out, card=card)
    try:
        examples = held_out(task, args.report_examples, report_seed, exclude=result.train_sources)
        card.update(report(model, tokenizer, examples))
    except Exception as err:
        raise RuntimeError(
            f"training finished and the checkpoint is saved in {folder}, but the held-out report failed "
            f"({type(err).__name__}: {err}); its card has no held-out scores"
        ) from err
    layers = ", ".join(f"layer {i}: {a:.1%}" for i, a in enumerate(card["alignment"]["per_layer"]))
    print(
        f"{task.name}: exact match on {card['held_out_examples']} fresh held-out examples: {card['held_out_exact_match']:.1%}\n"
        f"{task.name}: cross-attention argmax on a gold-aligned source token ({card['alignment']['tokens']} output tokens): {layers}\n"
        f"{task.name}: {result.steps} steps in {result.seconds:.0f} s, {n_params:,} parameters"
    )
    card["wall_seconds"] = round(time.perf_counter() - wall, 1)
    (folder / "card.json").write_text(json.dumps(card, indent=1, ensure_ascii=False), encoding="utf-8")
    print(
        f"saved {folder} ({sum(f.stat().st_size for f in folder.iterdir()) / 1e6:.2f} MB) in {card['wall_seconds']:.0f} s total"
    )
    return card


if __name__ == "__main__":
    main()
