"""Training the induction demo (tasks/induction.py): `python -m model.train --task induction --out FOLDER`.

Each step draws a fresh batch of random letters repeated twice (seeded: same command, same seed, same machine ->
same weights) and minimises the next-token loss on every position; AdamW with a short warm-up. Snapshots
(--snapshots N, model/checkpoints/snapshots.py) record the repeated half's accuracy (`repeated_half`), the best
induction head's score as a share of a perfect head's, and each layer's best previous-token score, on the same fresh
sequences for every snapshot; the card records `measure` of the final model.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import time
from pathlib import Path
from typing import Any

import torch

from model.checkpoints.checkpoint import save_checkpoint
from model.checkpoints.snapshots import FOLDER, save_snapshot, snapshot_steps, write_index
from model.network.config import TransformerConfig
from model.network.transformer import Transformer, build_model

from .decoder_only import train_step
from .induction import InductionTask, best_share, fresh_sequences, halves_accuracy, measure, tokenizer

# seed 2 of 0-3 (all trained the same way): its induction head alone carries the copy (with the previous-token head
# it reads), the other heads do not matter for it; the others spread it over two heads (docs/head-atlas.md)
DEFAULTS = dict(d_model=64, n_heads=2, layers=2, steps=2000, batch_size=32, lr=2e-3, warmup=100, seed=2)
SNAPSHOT_SEED = 500  # the fresh sequences every snapshot is scored on
SNAPSHOT_SEQUENCES = 64


def make_config(vocab_size: int, d_model: int, n_heads: int, layers: int) -> TransformerConfig:
    """Decoder-only, attention-only (feed_forward=False), pre-LN, rotary positions, tied embeddings."""
    return TransformerConfig(
        src_vocab_size=vocab_size, tgt_vocab_size=vocab_size, shape="decoder-only", n_encoder_layers=0,
        n_decoder_layers=layers, d_model=d_model, n_heads=n_heads, d_ff=1, feed_forward=False, dropout=0.0,
        norm_first=True, positional="rope", pe_layout="half", max_len=64, share_embeddings=True,
        tie_generator=True, generator_bias=False,
    )  # fmt: skip


def batch(rng: random.Random, vocab, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs (B, T), next tokens (B, T)) of `size` fresh sequences, right-padded (pad ignored by the loss)."""
    task = InductionTask()
    seqs = [vocab.encode(task.sample(rng).source) for _ in range(size)]
    width = max(len(s) for s in seqs) - 1
    x = torch.full((size, width), vocab.pad_id, dtype=torch.long)
    y = torch.full((size, width), vocab.pad_id, dtype=torch.long)
    for b, s in enumerate(seqs):
        x[b, : len(s) - 1] = torch.tensor(s[:-1])
        y[b, : len(s) - 1] = torch.tensor(s[1:])
    return x, y


def snapshot_scores(model: Transformer, tok, seqs) -> dict[str, Any]:
    share, previous = best_share(model, tok, seqs)
    _, repeated = halves_accuracy(model, seqs)
    return {"repeated_half": round(repeated, 4), "induction_share": round(share, 4), "previous_token": previous}


def train(args: argparse.Namespace, out: Path) -> tuple[Transformer, list[float], float, list[dict]]:
    torch.manual_seed(args.seed)
    tok = tokenizer()
    vocab = tok.source
    model = build_model(make_config(len(vocab), args.d_model, args.n_heads, args.layers), seed=args.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    rng = random.Random(f"induction-train:{args.seed}")
    probe = fresh_sequences(vocab, SNAPSHOT_SEQUENCES, SNAPSHOT_SEED)
    at = set(snapshot_steps(args.steps, args.snapshots)) if args.snapshots else set()
    entries: list[dict] = []

    def snapshot(step: int) -> None:
        if step in at:
            model.eval()
            entries.append(save_snapshot(model, tok, out / FOLDER, step, snapshot_scores(model, tok, probe)))
            write_index(out / FOLDER, entries, task="induction", total_steps=args.steps, examples=len(probe),
                        held_out_seed=SNAPSHOT_SEED, precision="float16")  # fmt: skip
            model.train()

    losses = []
    start = time.perf_counter()
    model.train()
    snapshot(0)
    for step in range(1, args.steps + 1):
        scale = min(step / args.warmup, 0.5 * (1 + math.cos(math.pi * step / args.steps)) * 0.9 + 0.1)
        for group in optimizer.param_groups:
            group["lr"] = args.lr * scale
        x, y = batch(rng, vocab, args.batch_size)
        losses.append(train_step(model, optimizer, x, y, vocab.pad_id))
        snapshot(step)
        if step % 250 == 0:
            print(f"step {step}: loss {sum(losses[-250:]) / 250:.4f}", flush=True)
    model.eval()
    return model, losses, time.perf_counter() - start, entries


def main(args: argparse.Namespace, command: str, cpu: str = "") -> dict[str, Any]:
    """Train, save the checkpoint (and snapshots) in args.out, measure, write the card; returns the card. cpu: the
    processor's name for the card (tasks/train.py's cpu_name)."""
    given = dict(d_model=args.d_model, n_heads=args.heads, layers=args.decoder_layers, steps=args.steps,
                 batch_size=args.batch_size, warmup=args.warmup, seed=args.seed)  # fmt: skip
    args = argparse.Namespace(**{**DEFAULTS, **{k: v for k, v in given.items() if v is not None}},
                              snapshots=args.snapshots, out=args.out, threads=args.threads)  # fmt: skip
    torch.set_num_threads(args.threads or 1)
    out = Path(args.out)
    model, losses, seconds, entries = train(args, out)
    tok = tokenizer()
    card = {
        "task": "induction",
        "shape": "decoder-only",
        "description": str(InductionTask.description),
        "command": command,
        "config": {k: v for k, v in model.config.to_dict().items() if k != "extra"},
        "examples": InductionTask().examples(),
        "input_tokens": {"min": 30, "max": 50, "unit": "characters"},
        "steps": args.steps,
        "seed": args.seed,
        "training_seconds": round(seconds, 1),
        "final_loss": round(sum(losses[-100:]) / 100, 4),
        "parameters": sum(p.numel() for p in {id(p): p for p in model.parameters()}.values()),
        "trained_on": f"{os.cpu_count()}-core CPU ({cpu}), {torch.get_num_threads()} threads, torch {torch.__version__}",
        "recipe": {k: getattr(args, k) for k in DEFAULTS},
    }
    card["induction"] = measure(model, tok)
    if entries:
        card["induction"]["snapshots"] = [
            {"step": e["step"], "induction_share": e["induction_share"], "repeated_half": e["repeated_half"]}
            for e in entries
        ]
    save_checkpoint(model, tok, out, card=card)
    print(json.dumps(card["induction"], indent=1))
    return card
