"""Head importance for one input: how much the output's log-probability drops when one head is switched off.

For each attention head (kind, layer, head) the model runs teacher-forced on one output (its own greedy
output for the source, or a given target) with that head alone ablated (its output zeroed before W^O, as
`capture(..., ablate=...)` does); the importance is the baseline total log-probability of the output minus
the ablated one. Positive: the head helps this output; about 0: it does not matter here.

All ablations run as batches of one pass: row b of the batch switches off its own head (the per-row
masks of model/interventions/heads_off.py, applied by the same recording hooks). The encoder runs once for the
unchanged model plus once per encoder head; rows that switch off a decoder head reuse the unchanged memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..interventions import KINDS, Interventions
from ..network.recording import record
from ..text.inputs import device_of, require_eval
from ..text.tokenizer import Tokenizer
from .capture import Capture
from .scored import prepare

LOGIT_BUDGET = 1 << 25  # most logits (rows x positions x vocabulary) one batch holds: 128 MB in float32
MAX_ROWS = 64  # most ablations per batch


def output_log_probs(cap: Capture, eos_id: int) -> np.ndarray:
    """(T,) log p of each output token (the decoder input shifted by one, then </s>) from cap.log_probs (T, V)."""
    if cap.log_probs is None:
        raise ValueError("this capture has no log_probs")
    targets = np.append(np.asarray(cap.target_ids)[1:], eos_id)  # (T,) the token each decoder position writes
    return cap.log_probs[np.arange(len(targets)), targets]


@dataclass
class HeadImportance:
    """The drop in the output's total log-probability when each head alone is switched off.

    L = layers of that kind's stack, H = heads. drop[kind] and log_prob[kind] are (L, H) float64 arrays
    for kind in encoder_self, decoder_self, cross.
    """

    source_tokens: list[str]  # S, ending with </s>
    target_tokens: list[str]  # T: the decoder's inputs <s> y_1 .. y_{T-1} (as Capture.target_tokens)
    output_tokens: list[str]  # the scored tokens y_1 .. y_T, </s> last when the output ended with it (else T - 1)
    generated: bool  # True when the output is the model's own greedy output
    baseline: float  # total log-probability of the output, no head switched off (but `interventions` applied)
    log_prob: dict[str, np.ndarray]  # kind -> (L, H) total log-probability with that head switched off
    drop: dict[str, np.ndarray]  # kind -> (L, H) baseline - log_prob: positive where the head helps
    interventions: dict  # what was changed in every row, also the baseline (Interventions.describe())

    def ranked(self) -> list[tuple[str, int, int, float]]:
        """Every head as (kind, layer, head, drop), the largest drop first."""
        heads = [(k, int(i), int(h), float(d[i, h])) for k, d in self.drop.items() for i, h in np.ndindex(d.shape)]
        return sorted(heads, key=lambda x: -x[3])


def _heads(model: nn.Module) -> list[tuple[str, int, int]]:
    """Every (kind, layer, head) of the model, in KINDS order, then layer, then head."""
    cfg = model.config
    layers = {"encoder_self": cfg.n_encoder_layers, "decoder_self": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
    return [(k, i, h) for k in KINDS for i in range(layers[k]) for h in range(cfg.n_heads)]


def _chunks(n: int, size: int) -> list[range]:
    return [range(start, min(n, start + size)) for start in range(0, n, size)]


@torch.no_grad()
def head_importance(
    model: nn.Module,
    tokenizer: Tokenizer,
    source: str,
    target: str | None = None,
    ablate: Sequence[tuple[str, int, int]] | None = None,
    positional: str | None = None,
    shift: int = 1,
    seed: int = 0,
    batch_size: int = MAX_ROWS,
    progress: Callable[[int, int], None] | None = None,
    interventions: Interventions | None = None,
) -> HeadImportance:
    """For each head, the drop in total log-probability of the output when that head alone is switched off.

    The output is `target` (its tokens then </s>) or, with target=None, the unchanged model's greedy output
    for the source (as `capture` uses), teacher-forced. interventions (or ablate/positional/shift/seed): a change
    applied to every pass, the baseline too (e.g. the heads a user already switched off); ValueError names a bad one.
    batch_size: most ablations per pass (also bounded by LOGIT_BUDGET).
    progress(done, total): called after each batched pass of the decoder, with the rows done so far.
    """
    require_eval(model)
    base = Interventions.given(interventions, ablate=ablate, positional=positional, shift=shift, seed=seed)
    vocab = tokenizer.target
    prep = prepare(model, tokenizer, source, target)
    src_ids_list, inputs, scored = prep.src, prep.inputs, prep.scored
    base.check(model, (len(src_ids_list), len(inputs)))
    heads = _heads(model)
    encoder_heads = [h for h in heads if h[0] == "encoder_self"]
    # row 0: nothing more switched off; row 1 + j: heads[j] switched off
    rows = [frozenset()] + [frozenset({h}) for h in heads]
    # the encoder row each row reads: 0 (unchanged memory) or 1 + its encoder head's index
    memory_of = [0] + [1 + encoder_heads.index(h) if h[0] == "encoder_self" else 0 for h in heads]
    device = device_of(model)
    total = torch.zeros(len(rows), dtype=torch.float64)
    if scored:
        src_ids = torch.tensor([src_ids_list], device=device)  # (1, S)
        tgt_ids = torch.tensor([inputs], device=device)  # (1, T)
        gold = torch.tensor(scored, device=device)  # (T,)
        enc_rows = [frozenset()] + [frozenset({h}) for h in encoder_heads]
        size = max(1, min(batch_size, LOGIT_BUDGET // (len(inputs) * model.config.tgt_vocab_size)))
        memories, mask = [], None
        for part in _chunks(len(enc_rows), size):
            with record(model, interventions=base.with_rows(enc_rows[r] for r in part), keep=False):
                memory, mask = model.encode(src_ids.expand(len(part), -1))  # (b, S, D)
            memories.append(memory)
        memory = torch.cat(memories)  # (1 + encoder heads, S, D)
        for part in _chunks(len(rows), size):
            with record(model, interventions=base.with_rows(rows[r] for r in part), keep=False):
                mem = memory[[memory_of[r] for r in part]]  # (b, S, D)
                logits = model.decode(tgt_ids.expand(len(part), -1), mem, mask)  # (b, T, V)
            logp = logits.double().log_softmax(-1)[:, torch.arange(len(scored)), gold]  # (b, len(scored))
            total[list(part)] = logp.sum(-1).cpu()
            if progress is not None:
                progress(part.stop, len(rows))
    baseline = float(total[0])
    cfg = model.config
    shapes = {"encoder_self": cfg.n_encoder_layers, "decoder_self": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
    log_prob = {k: np.zeros((n, cfg.n_heads)) for k, n in shapes.items()}
    for (kind, layer, head), value in zip(heads, total[1:].tolist()):
        log_prob[kind][layer, head] = value
    return HeadImportance(
        source_tokens=prep.src_tokens,
        target_tokens=vocab.decode(inputs),
        output_tokens=vocab.decode(scored),
        generated=target is None,
        baseline=baseline,
        log_prob=log_prob,
        drop={k: baseline - v for k, v in log_prob.items()},
        interventions=base.describe(),
    )
