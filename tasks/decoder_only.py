"""Decoder-only demos: the reverse task written as one sequence, `stressed=desserts</s>`, learned by a causal
decoder (no encoder, no cross-attention) with rotary positions or with no positions at all (NoPE).

The finding it shows with this project's own numbers (Kazemnejad et al. 2023, "The Impact of Positional Encoding on
Length Generalization in Transformers"): a causal decoder without any positional encoding still knows order (the
causal mask lets each position count what it sees), while the encoder-decoder without positions (`reverse_nope`,
its encoder bidirectional) cannot reverse at all.

    python -m tasks.decoder_only --positional rope --out checkpoints/reverse_decoder_rope
    python -m tasks.decoder_only --positional none --out checkpoints/reverse_decoder_nope

The loss is on the continuation only (after `=`): the prompt is given. Exact match and the length experiment
(fresh strings of each length, shorter and longer than trained) decode the prompt `source=` greedily through the
library's one loop and go into the card.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from model.checkpoints.checkpoint import save_checkpoint
from model.decoding import greedy_ids
from model.network.config import TransformerConfig
from model.network.transformer import Transformer, build_model
from model.text.tokenizer import Tokenizer, Vocab

from .length_experiment import examples_by_length
from .registry import get_task
from .tasks import Example, dataset, held_out, input_range, one_sequence_description

SEP = "="  # between the string and its reversal
BEYOND = 4  # the length experiment: every trained length, then this many longer ones
# Small enough to train in minutes on one shared CPU core: strings of 1-12 letters (the reverse task's up to 12)
DEFAULTS = dict(d_model=64, n_heads=4, d_ff=256, layers=2, steps=3000, batch_size=64, lr=2e-3, warmup=200,
                train_size=100_000, max_length=12, seed=0)  # fmt: skip


def tokenizer_for(task_name: str = "reverse") -> Tokenizer:
    """The task's characters plus the separator, one vocabulary (a decoder-only model reads one sequence)."""
    task = get_task(task_name)
    vocab = Vocab.build([*task.source_symbols(), *task.target_symbols(), SEP], level="char")
    return Tokenizer(vocab, vocab)


def prompt(source: str) -> str:
    return source + SEP


def sequence(example: Example, vocab: Vocab) -> tuple[list[int], int]:
    """(ids of `source=target</s>`, index of the first target token): the loss starts there."""
    head = vocab.encode(prompt(example.source))
    return head + vocab.encode(example.target) + [vocab.eos_id], len(head)


def make_config(
    vocab: Vocab, positional: str, d_model: int, n_heads: int, d_ff: int, layers: int, longest: int
) -> TransformerConfig:
    return TransformerConfig(
        src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), shape="decoder-only", n_encoder_layers=0,
        n_decoder_layers=layers, d_model=d_model, n_heads=n_heads, d_ff=d_ff, dropout=0.0, norm_first=True,
        positional=positional, pe_layout="half", max_len=2 * longest + 2, share_embeddings=True,
        tie_generator=True, generator_bias=False, activation="gelu", pad_id=vocab.pad_id, bos_id=vocab.bos_id,
        eos_id=vocab.eos_id,
    )  # fmt: skip


def batch(rows: Sequence[tuple[list[int], int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs (B, T), targets (B, T)): targets are the next token, pad (ignored) before the continuation."""
    width = max(len(ids) for ids, _ in rows) - 1
    x = torch.full((len(rows), width), pad, dtype=torch.long)
    y = torch.full((len(rows), width), pad, dtype=torch.long)
    for b, (ids, start) in enumerate(rows):
        x[b, : len(ids) - 1] = torch.tensor(ids[:-1])
        y[b, start - 1 : len(ids) - 1] = torch.tensor(ids[start:])
    return x, y


def train_step(
    model: Transformer, optimizer: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, pad: int
) -> float:
    """One optimizer step of next-token cross-entropy on a batch of decoder inputs x (B, T) and targets y (B, T)
    (pad targets ignored), gradients clipped at norm 1; returns the loss."""
    logits = model.decode(x)  # (B, T, V)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1), ignore_index=pad)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return float(loss.detach())


def train(model: Transformer, vocab: Vocab, examples: Sequence[Example], steps: int, batch_size: int, lr: float,
          warmup: int, seed: int, log=print) -> list[float]:  # fmt: skip
    """AdamW with warm-up then cosine decay; next-token cross-entropy on the continuation (pad ignored)."""
    rng = random.Random(seed)
    rows = [sequence(e, vocab) for e in examples]
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.01)
    model.train()
    losses = []
    for step in range(1, steps + 1):
        scale = min(step / warmup, 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warmup) / max(1, steps - warmup)))))
        for group in optimizer.param_groups:
            group["lr"] = lr * scale
        x, y = batch(rng.sample(rows, batch_size), vocab.pad_id)
        losses.append(train_step(model, optimizer, x, y, vocab.pad_id))
        if step % 250 == 0:
            log(f"step {step}: loss {sum(losses[-250:]) / 250:.4f}")
    return losses


@torch.no_grad()
def exact_match(model: Transformer, tokenizer: Tokenizer, examples: Sequence[Example]) -> float:
    """Fraction of examples whose greedy continuation of `source=` is exactly `target</s>`."""
    model.eval()
    vocab = tokenizer.target
    prompts = [vocab.encode(prompt(e.source)) for e in examples]
    steps = max(len(e.target) for e in examples) + 1
    outputs = greedy_ids(model, prompts, max_steps=steps)
    right = [list(o) == vocab.encode(e.target) + [vocab.eos_id] for e, o in zip(examples, outputs, strict=True)]
    return sum(right) / max(1, len(right))


def length_experiment(
    model: Transformer, tokenizer: Tokenizer, lengths: Sequence[int], n: int, exclude: set[str]
) -> dict[str, Any]:
    """Exact match per input length (n fresh strings each): what the cards' length_experiment holds."""
    by_length = examples_by_length("reverse", lengths, n, exclude=exclude)
    scores = [round(exact_match(model, tokenizer, by_length[k]), 3) for k in lengths]
    return {"lengths": list(lengths), "exact_match": scores, "examples": [len(by_length[k]) for k in lengths]}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--positional", choices=("rope", "none", "learned"), required=True)
    parser.add_argument("--out", type=Path, required=True)
    for name, value in DEFAULTS.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    parser.add_argument("--report-examples", type=int, default=500)
    parser.add_argument("--length-examples", type=int, default=50)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    tokenizer = tokenizer_for()
    vocab = tokenizer.target
    task = get_task("reverse")
    examples = [e for e in dataset(task, args.train_size, args.seed) if len(e.source) <= args.max_length]
    sources = {e.source for e in examples}
    lengths = list(range(1, args.max_length + BEYOND + 1))
    config = make_config(vocab, args.positional, args.d_model, args.n_heads, args.d_ff, args.layers, lengths[-1])
    model = build_model(config, seed=args.seed)
    start = time.perf_counter()
    losses = train(model, vocab, examples, args.steps, args.batch_size, args.lr, args.warmup, args.seed)
    seconds = time.perf_counter() - start
    model.eval()
    report = [e for e in held_out(task, 3 * args.report_examples, args.seed + 1, exclude=sources)
              if len(e.source) <= args.max_length][: args.report_examples]  # fmt: skip
    card = {
        "task": "reverse",
        "shape": "decoder-only",
        "description": str(one_sequence_description(args.max_length)),  # shown translated (tasks.cards)
        "command": "python -m tasks.decoder_only " + " ".join(argv or []),
        "config": {k: v for k, v in config.to_dict().items() if k not in ("extra",)},
        "examples": [prompt(s) for s in ("stressed", "parts", "abcdefghij", "aaabbbccc", "lager")],
        "input_format": {"ends_with": SEP},  # the app and the pack say so when a typed prompt lacks it
        "input_tokens": input_range(task, sources),
        "steps": args.steps,
        "seed": args.seed,
        "training_seconds": round(seconds, 1),
        "final_loss": round(sum(losses[-100:]) / 100, 4),
        "recipe": {k: getattr(args, k) for k in DEFAULTS},
        "held_out_exact_match": round(exact_match(model, tokenizer, report), 3),
        "held_out_examples": len(report),
    }
    card["length_experiment"] = length_experiment(model, tokenizer, lengths, args.length_examples, sources)
    save_checkpoint(model, tokenizer, args.out, card=card)
    print({k: card[k] for k in ("held_out_exact_match", "training_seconds", "final_loss")})
    print(card["length_experiment"]["exact_match"])
    return card


if __name__ == "__main__":
    main()
