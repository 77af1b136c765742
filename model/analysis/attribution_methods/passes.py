"""The passes the attribution methods share: the scored output, occlusion's batched pass, the gradient methods'
function (the model's own encode from embeddings, then decode) and integrated gradients' path, rollout and flow from
the capture of the same pass. One module per method (beside this one) says which it uses."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from ...interventions import KINDS, Interventions
from ...network.recording import record
from ...text.inputs import device_of
from ...text.tokenizer import Tokenizer
from .. import attribution_graph as graph
from ..capture import capture
from ..scored import Prepared

LOGIT_BUDGET = 1 << 24  # most logits (rows x positions x vocabulary) one batch holds: 64 MB in float32


def special_id(tokenizer: Tokenizer, name: str) -> int:
    """The source vocabulary's id of <unk> or <pad> (ValueError when it has none)."""
    value = getattr(tokenizer.source, f"{name}_id", None)
    if value is None:
        raise ValueError(f"the source vocabulary has no {name} token")
    return int(value)


def keep_masks(model: nn.Module, changes: Interventions) -> dict[str, np.ndarray] | None:
    """{kind: (L, H) bool}, False for the heads `changes` switches off; None when none is."""
    if not changes.ablate:
        return None
    cfg = model.config
    layers = {"encoder_self": cfg.n_encoder_layers, "decoder_self": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
    keep = {k: np.ones((n, cfg.n_heads), dtype=bool) for k, n in layers.items()}
    for kind, layer, head in changes.ablate:
        keep[kind][layer, head] = False
    return keep if set(keep) == set(KINDS) else None


def graph_scores(model, tokenizer, source, target, method, changes, rows, progress) -> np.ndarray:
    """Rollout or flow from the capture of the same pass (the attention maps with `changes` applied)."""
    cap = capture(model, tokenizer, source, target, interventions=changes)
    keep = keep_masks(model, changes)
    if method == "rollout":
        return graph.rollout(cap.encoder_self, cap.decoder_self, cap.cross, keep)[:rows]
    return graph.flow(cap.encoder_self, cap.decoder_self, cap.cross, keep, rows=rows, progress=progress)


def _chunks(n: int, size: int) -> list[range]:
    return [range(start, min(n, start + size)) for start in range(0, n, size)]


def _rows_per_pass(model: nn.Module, prep: Prepared, batch_size: int) -> int:
    return max(1, min(batch_size, LOGIT_BUDGET // (len(prep.inputs) * model.config.tgt_vocab_size)))


@torch.no_grad()
def occlusion(model, prep: Prepared, replacement_id: int, changes, batch_size, progress):
    """(T, S) log p(y_t) - log p(y_t | source token s replaced), and (T,) log p(y_t); decoder input held fixed."""
    device = device_of(model)
    S, T = len(prep.src), len(prep.scored)
    src = torch.tensor(prep.src, device=device)
    rows = src.repeat(S + 1, 1)  # (1 + S, S): row 0 unchanged, row 1 + s with token s replaced
    rows[torch.arange(1, S + 1), torch.arange(S)] = replacement_id
    tgt = torch.tensor([prep.inputs], device=device)  # (1, T_in)
    gold = torch.tensor(prep.scored, device=device)
    logp = torch.zeros(S + 1, T, dtype=torch.float64)
    for part in _chunks(S + 1, _rows_per_pass(model, prep, batch_size)):
        with record(model, interventions=changes, keep=False):
            memory, mask = model.encode(rows[list(part)])  # (b, S, D)
            logits = model.decode(tgt.expand(len(part), -1), memory, mask)  # (b, T_in, V)
        logp[list(part)] = logits.double().log_softmax(-1)[:, torch.arange(T), gold].cpu()
        if progress is not None:
            progress(part.stop, S + 1)
    return (logp[0][:, None] - logp[1:].T).numpy(), logp[0].numpy()


def output_log_prob(model: nn.Module, src: list[int], inputs: list[int], scored: list[int]) -> Callable:
    """F(x, rows) -> (B,): log p of output token rows[b] given source embeddings x[b] (B, S, D), the source
    embedding table's output for the ids `src`; the decoder input held fixed. The function every gradient method
    differentiates: the model's own encode (its `embeds` entry: the same scale, positions, norms and layers as from
    ids) and decode."""
    device = device_of(model)
    src_ids = torch.tensor([src], device=device)  # (1, S): the padding mask and length (nothing is padded)
    tgt = torch.tensor([inputs], device=device)  # (1, T_in)
    gold = torch.tensor(scored, device=device)  # (T,)

    def forward(x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        memory, mask = model.encode(src_ids.expand(len(x), -1), embeds=x)  # (B, S, D)
        logits = model.decode(tgt.expand(len(x), -1), memory, mask)  # (B, T_in, V)
        logp = logits.log_softmax(-1)
        return logp[torch.arange(len(x)), rows, gold[rows]]

    return forward


def gradients(model, prep: Prepared, integrated: bool, baseline_id, steps, changes, batch_size, progress, plan=None):
    """integrated: integrated gradients along the path from the baseline (else gradient x input at x)."""
    """(T, S) attributions summed over the embedding, (T,) log p(y_t), (T,) F(x) - F(baseline)."""
    from captum.attr import InputXGradient

    device = device_of(model)
    src = torch.tensor([prep.src], device=device)
    x = model.src_embed(src).detach()  # (1, S, D)
    base = torch.zeros_like(x) if baseline_id is None else model.src_embed(torch.full_like(src, baseline_id)).detach()
    forward = output_log_prob(model, prep.src, prep.inputs, prep.scored)
    T = len(prep.scored)
    per_pass = _rows_per_pass(model, prep, batch_size if plan is None else min(batch_size, plan.rows))
    rows = torch.arange(T, device=device)
    with record(model, interventions=changes, keep=False):
        with torch.no_grad():
            logp = forward(x.expand(T, -1, -1), rows).double().cpu().numpy()
            start = forward(base.expand(T, -1, -1), rows).double().cpu().numpy()
        if integrated:
            rows_ig = max(
                per_pass, min(GRADIENT_ROWS, LOGIT_BUDGET // (len(prep.inputs) * model.config.tgt_vocab_size))
            )
            if plan is not None:  # what autograd keeps for one pass, counted by the budget
                rows_ig = max(1, min(rows_ig, plan.rows))
            pieces = None if plan is None else plan.pieces
            attr = _integrated(forward, x[0], base[0], logp - start, steps, rows_ig, progress, pieces)
        else:
            attr = torch.zeros(T, *x.shape[1:], dtype=torch.float64)
            for part in _chunks(T, per_pass):
                inputs = x.expand(len(part), -1, -1).clone().requires_grad_()
                attr[list(part)] = (
                    InputXGradient(forward)
                    .attribute(inputs, additional_forward_args=(rows[list(part)],))
                    .detach()
                    .double()
                    .cpu()
                )
                if progress is not None:
                    progress(part.stop, T)
    # (T, S): integrated gradients summed over the embedding (completeness); x * grad by its length over the embedding,
    # as the signed sum (the dot product x . grad) cancels: on the reverse demo it found the mirrored letter for 5 of
    # 20 output letters, the length for 19 of 20
    per_token = attr.sum(-1) if integrated else attr.norm(dim=-1)
    return per_token.numpy(), logp, logp - start


GRADIENT_ROWS = 1024  # most path points of one integrated-gradients pass
PIECE_TOLERANCE = 0.004  # a piece of the path is kept when its sums miss its change of log p by at most this share
MIN_PIECE = 1 / 256  # pieces are halved at most down to this length of the path


def _integrated(forward, x, base, change, steps, per_pass, progress, max_pieces=None) -> torch.Tensor:
    """(T, S, D) integrated gradients of every output row, the path cut into pieces where the quadrature misses.

    Each piece [a, b] of the straight path from the baseline to x is one Captum IntegratedGradients call with
    `steps` Gauss-Legendre points, from x' + a (x - x') to x' + b (x - x'); path integrals add up, so the pieces'
    sum is the integral over the whole path. A piece whose attributions do not sum to its own change of log p
    within (PIECE_TOLERANCE x |the row's change| + 1e-4) x its length + 1e-5 (float32's noise) is halved and done again: the sum of the
    kept pieces then misses the row's change by at most PIECE_TOLERANCE of it (0.4%), unless halving stopped at
    MIN_PIECE, or at max_pieces pieces done and pending in all (the budget counted them before the start).
    change: (T,) log p(x) - log p(x').
    """
    from captum.attr import IntegratedGradients

    T = len(change)
    out = torch.zeros(T, *x.shape, dtype=torch.float64)
    pending = [(t, 0.0, 1.0) for t in range(T)]
    pieces = T  # pieces done or pending: each split adds one
    at_once = max(1, per_pass // steps)
    done = 0.0
    while pending:
        todo, pending = pending[:at_once], pending[at_once:]
        rows = torch.tensor([t for t, _, _ in todo], device=x.device)
        lo = torch.tensor([a for _, a, _ in todo], dtype=x.dtype, device=x.device)[:, None, None]
        hi = torch.tensor([b for _, _, b in todo], dtype=x.dtype, device=x.device)[:, None, None]
        start, end = base + lo * (x - base), base + hi * (x - base)  # (b, S, D)
        attr = IntegratedGradients(forward).attribute(
            end, start, additional_forward_args=(rows,), n_steps=steps, internal_batch_size=per_pass
        )
        with torch.no_grad():
            gain = (forward(end, rows) - forward(start, rows)).double()
        missed = (attr.double().sum((1, 2)) - gain).abs().cpu()
        for i, (t, a, b) in enumerate(todo):
            close = missed[i] <= (PIECE_TOLERANCE * abs(change[t]) + 1e-4) * (b - a) + 1e-5
            if close or b - a <= MIN_PIECE or (max_pieces is not None and pieces >= max_pieces):
                out[t] += attr[i].detach().double().cpu()
                done += b - a
            else:
                pending += [(t, a, (a + b) / 2), (t, (a + b) / 2, b)]
                pieces += 1
        if progress is not None:
            progress(min(T, int(done)), T)
    return out
