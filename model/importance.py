"""How much each head matters for one input: the drop in log-probability of the model's output when that head
alone is switched off (issue 14).

    output   = the decoder input shifted by one, ending with </s>: y_1 .. y_n </s> for the input <s> y_1 .. y_n
               (the model's own greedy output when no target is given, as `capture` makes it)
    score    = sum over output positions of log p(output token | source, decoder input so far)
    drop     = score(plain model) - score(model with that one head's output zeroed before W^O)

A positive drop: the head helped the model write this output; near zero: it does not matter here; negative: the
output became more likely without it. One teacher-forced pass per head (the decoder input stays the plain
model's output); ablating a decoder head reuses the plain encoder output, which that head cannot change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .capture import Capture
from .decoding import greedy_ids
from .inputs import as_batch, prepare_source, prepare_target, require_eval
from .interventions import KINDS, Interventions
from .recording import record
from .tokenizer import Tokenizer


def output_log_probs(cap: Capture, eos_id: int) -> np.ndarray:
    """(T,) log p of each output token (the decoder input shifted by one, then </s>) from cap.log_probs (T, V)."""
    if cap.log_probs is None:
        raise ValueError("this capture has no log_probs")
    targets = np.append(np.asarray(cap.target_ids)[1:], eos_id)  # (T,) the token each decoder position writes
    return cap.log_probs[np.arange(len(targets)), targets]


@dataclass
class HeadImportance:
    """drops[kind]: (layers, heads) drop in the output's summed log-probability when that head alone is ablated."""

    baseline: float  # summed log-probability of the output under the plain model
    drops: dict[str, np.ndarray]  # kind (encoder_self, decoder_self, cross) -> (L, H) float64
    output_tokens: list[str]  # the output scored: y_1 .. y_n </s>

    def ranked(self) -> list[tuple[str, int, int, float]]:
        """Every head as (kind, layer, head, drop), the largest drop first."""
        rows = [(k, int(i), int(h), float(d[i, h])) for k, d in self.drops.items() for i, h in np.ndindex(d.shape)]
        return sorted(rows, key=lambda r: -r[3])


@torch.no_grad()
def head_importance(
    model: nn.Module,
    tokenizer: Tokenizer,
    source: str,
    target: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> HeadImportance:
    """For every head of every kind and layer, the drop in the output's log-probability when it alone is ablated.

    target=None scores the model's own greedy output; a target text scores that text (teacher forcing).
    progress(done, total) is called after each head (for a progress bar).
    """
    require_eval(model)
    cfg, vocab = model.config, tokenizer.target
    src = prepare_source(model, tokenizer, source)
    if target is None:
        out = greedy_ids(model, [src.ids], bos_id=vocab.bos_id, eos_id=vocab.eos_id)[0]
        tgt_ids = [vocab.bos_id] + [i for i in out if i != vocab.eos_id]
    else:
        tgt_ids, _ = prepare_target(model, vocab, target)
    written = torch.tensor(tgt_ids[1:] + [vocab.eos_id], device=as_batch(model, tgt_ids).device)  # (T,)
    src_batch, tgt_batch = as_batch(model, src.ids), as_batch(model, tgt_ids)  # (1, S), (1, T)

    def score(changes: Interventions, memory=None) -> float:
        with record(model, interventions=changes):  # the explicit attention path for every pass, plain included
            mem = memory if memory is not None else model.encode(src_batch)[0]  # (1, S, D)
            logits = model.decode(tgt_batch, mem, plain_mask)[0].float()  # (T, V)
        return float(logits.log_softmax(-1).gather(-1, written[:, None]).sum())

    with record(model):
        plain_memory, plain_mask = model.encode(src_batch)  # (1, S, D): decoder heads cannot change it
    baseline = score(Interventions(), plain_memory)
    layers = {"encoder_self": cfg.n_encoder_layers, "decoder_self": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
    total, done = sum(layers.values()) * cfg.n_heads, 0
    drops = {}
    for kind in KINDS:
        d = np.zeros((layers[kind], cfg.n_heads))
        for layer in range(layers[kind]):
            for head in range(cfg.n_heads):
                changes = Interventions.make([(kind, layer, head)])
                d[layer, head] = baseline - score(changes, None if kind == "encoder_self" else plain_memory)
                done += 1
                if progress is not None:
                    progress(done, total)
        drops[kind] = d
    return HeadImportance(baseline, drops, vocab.decode(written.tolist()))
