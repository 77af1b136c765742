"""Train a demo model on one of the built-in tasks: the paper's recipe, scaled down to a laptop CPU.

    python -m model.train --task reverse --out runs/reverse
    python -m model.train --task reverse --out checkpoints/reverse --overwrite   # replace the shipped one

The folder given by --out must be new or empty; an existing checkpoint (the shipped ones included) is
replaced only with --overwrite. The checkpoint is saved as soon as training ends, before the report
(held-out exact match and attention alignment) runs; the report then completes the card.

Recipe (section 5 of "Attention Is All You Need"), batches and the training loop: tasks/training.py. Each task has
defaults (TASK_DEFAULTS) that reproduce the shipped checkpoint exactly; every one of them can be overridden on the
command line. Held-out examples come from `held_out(task, n, seed + offset, exclude=the training sources)`, so they
are fresh: a progress set (shown on the bar) and the 500 examples of the final report. Same command, same seed, same
machine -> same weights.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from model.checkpoints.checkpoint import save_checkpoint
from model.checkpoints.snapshots import FOLDER as SNAPSHOT_FOLDER
from model.checkpoints.snapshots import INDEX as SNAPSHOT_INDEX
from model.checkpoints.snapshots import save_snapshot, write_index
from model.network.config import POSITIONAL_KINDS, PRESETS, TransformerConfig
from model.network.transformer import Transformer
from model.text.tokenizer import Tokenizer

from .evaluate import Evaluation, evaluate
from .registry import TASKS, get_task
from .tasks import Example, held_out, input_range
from .training import PROGRESS_SEED_OFFSET, build_tokenizer, train

REPORT_EXAMPLES = 500  # held-out examples of the final report
REPORT_SEED_OFFSET = 1  # held_out seed of the final report: seed + 1
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
    if args.task == "induction":  # decoder-only and attention-only, fresh random batches: its own loop
        from .induction_train import main as train_induction

        return train_induction(args, recorded_command(argv), cpu_name())
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
