"""The passes the attribution methods share: the scored output, occlusion's batched pass, the gradient methods'
function (the model's own encode from embeddings, then decode) and integrated gradients' path, rollout and flow from
the capture of the same pass. One module per method (beside this one) says which it uses."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from ...interventions import Interventions
from ...network.recording import record
from ...text.inputs import device_of
from ...text.tokenizer import Tokenizer
from .. import attribution_graph as graph
from ..capture import capture
from ..scored import Prepared

LOGIT_BUDGET = 1 << 24  # most logits (rows x positions x vocabulary) one batch holds: 64 MB in float32


def special_id(tokenizer: Tokenizer, name: str) -> int:
    """The source vocabulary's id of <unk>, <pad> or its mask token (BERT's [MASK], BART's <mask>); ValueError when it
    has none."""
    value = getattr(tokenizer.source, f"{name}_id", None)
    if value is None:
        raise ValueError(f"the source vocabulary has no {name} token")
    return int(value)


def has_special(name: object, tokenizer: Tokenizer) -> bool:
    """Whether the source vocabulary has the special token `name` ("zero": no token needed): a Choice's `offered`."""
    return name == "zero" or getattr(tokenizer.source, f"{name}_id", None) is not None


def keep_masks(model: nn.Module, changes: Interventions) -> dict[str, np.ndarray] | None:
    """{kind: (L, H) bool} for the attention kinds the model's shape has, False for the heads `changes` switches
    off; None when none is."""
    if not changes.ablate:
        return None
    cfg = model.config
    layers: dict[str, int] = {}
    for kind, i, _module in model.attention_modules():
        layers[kind] = max(layers.get(kind, 0), i + 1)
    keep = {k: np.ones((n, cfg.n_heads), dtype=bool) for k, n in layers.items()}
    for kind, layer, head in changes.ablate:
        keep[kind][layer, head] = False
    return keep


def graph_scores(model, tokenizer, source, target, method, changes, rows, progress, prep=None) -> np.ndarray:
    """Rollout or flow from the attention maps of the same pass (with `changes` applied). A decoder-only or
    encoder-only model: over its one sequence (model/analysis/attribution_graph.py, sequence_rollout), the maps
    recorded in the pass of logits_of, rows at the positions that score the output, columns the source tokens."""
    keep = keep_masks(model, changes)
    if model.config.shape != "encoder-decoder":
        kind = "decoder_self" if model.config.has_decoder else "encoder_self"
        with torch.no_grad(), record(model, interventions=changes) as rec:
            logits_of(model, prep, torch.tensor([prep.src], device=device_of(model)))
        maps = stacked(rec, kind)
        queries = list(range(prep.first, prep.first + rows))
        keys = list(range(len(prep.src)))
        mask = None if keep is None else keep[kind]
        if method == "rollout":
            return graph.sequence_rollout(maps, mask, queries, keys)
        return graph.sequence_flow(maps, mask, queries, keys, progress=progress)
    cap = capture(model, tokenizer, source, target, interventions=changes)
    if method == "rollout":
        return graph.rollout(cap.encoder_self, cap.decoder_self, cap.cross, keep)[:rows]
    return graph.flow(cap.encoder_self, cap.decoder_self, cap.cross, keep, rows=rows, progress=progress)


def logits_of(model: nn.Module, prep: Prepared, src: torch.Tensor, embeds: torch.Tensor | None = None) -> torch.Tensor:
    """(B, N, V) the model's own pass over B rows whose source ids are src (B, S), everything else as prepared and
    held fixed; embeds (B, S, D): the embedding table's output to use for those ids (transformers' inputs_embeds).
    Encoder-decoder: encode the source, decode the decoder inputs; decoder-only: decode the prompt then the
    continuation as one sequence; encoder-only: the output head over the encoded text. Row t of the scored output
    is position prep.first + t."""
    cfg = model.config
    device = device_of(model)
    B = len(src)
    if not cfg.has_encoder:  # decoder-only: the source is the prompt, the continuation follows it
        tail = torch.tensor([prep.inputs[len(prep.src) :]], dtype=torch.long, device=device).expand(B, -1)
        full = None if embeds is None else torch.cat([embeds, model.tgt_embed(tail).to(embeds.dtype)], 1)
        return model.decode(torch.cat([src, tail], 1), embeds=full)  # (B, P + T_cont, V)
    memory, mask = model.encode(src, embeds=embeds)  # (B, S, D)
    if not cfg.has_decoder:
        return model.logits(memory)  # (B, S, V)
    tgt = torch.tensor([prep.inputs], device=device)  # (1, T_in)
    return model.decode(tgt.expand(B, -1), memory, mask)  # (B, T_in, V)


def stacked(recorder, kind: str) -> np.ndarray:
    """(L, H, N, N) the maps of one kind that a recorded pass kept, batch item 0."""
    maps = [recorder.attention[(kind, i)][-1][0] for i in recorder.layers(kind)]
    return torch.stack(maps).float().cpu().numpy() if maps else np.zeros((0, 0, 0, 0), dtype=np.float32)


def _chunks(n: int, size: int) -> list[range]:
    return [range(start, min(n, start + size)) for start in range(0, n, size)]


def _positions(prep: Prepared) -> int:
    """Positions whose logits one row's pass computes."""
    return max(len(prep.inputs), len(prep.src))


def _rows_per_pass(model: nn.Module, prep: Prepared, batch_size: int) -> int:
    return max(1, min(batch_size, LOGIT_BUDGET // (_positions(prep) * model.config.tgt_vocab_size)))


@torch.no_grad()
def occlusion(model, prep: Prepared, replacement_id: int, changes, batch_size, progress):
    """(T, S) log p(y_t) - log p(y_t | source token s replaced), and (T,) log p(y_t); decoder input held fixed."""
    device = device_of(model)
    S, T = len(prep.src), len(prep.scored)
    src = torch.tensor(prep.src, device=device)
    rows = src.repeat(S + 1, 1)  # (1 + S, S): row 0 unchanged, row 1 + s with token s replaced
    rows[torch.arange(1, S + 1), torch.arange(S)] = replacement_id
    gold = torch.tensor(prep.scored, device=device)
    at = prep.first + torch.arange(T)
    logp = torch.zeros(S + 1, T, dtype=torch.float64)
    for part in _chunks(S + 1, _rows_per_pass(model, prep, batch_size)):
        with record(model, interventions=changes, keep=False):
            logits = logits_of(model, prep, rows[list(part)])  # (b, N, V)
        logp[list(part)] = logits.double().log_softmax(-1)[:, at, gold].cpu()
        if progress is not None:
            progress(part.stop, S + 1)
    return (logp[0][:, None] - logp[1:].T).numpy(), logp[0].numpy()


def output_log_prob(model: nn.Module, prep: Prepared) -> Callable:
    """F(x, rows) -> (B,): log p of output token rows[b] given source embeddings x[b] (B, S, D), the source
    embedding table's output for the ids `prep.src`; everything else held fixed. The function every gradient method
    differentiates: the model's own pass (logits_of, its `embeds` entry: the same scale, positions, norms and layers
    as from ids)."""
    device = device_of(model)
    src_ids = torch.tensor([prep.src], device=device)  # (1, S): the padding mask and length (nothing is padded)
    gold = torch.tensor(prep.scored, device=device)  # (T,)

    def forward(x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        logp = logits_of(model, prep, src_ids.expand(len(x), -1), embeds=x).log_softmax(-1)  # (B, N, V)
        return logp[torch.arange(len(x)), prep.first + rows, gold[rows]]

    return forward


def gradients(model, prep: Prepared, integrated: bool, baseline_id, steps, changes, batch_size, progress, plan=None):
    """integrated: integrated gradients along the path from the baseline (else gradient x input at x)."""
    """(T, S) attributions summed over the embedding, (T,) log p(y_t), (T,) F(x) - F(baseline)."""
    from captum.attr import InputXGradient

    device = device_of(model)
    src = torch.tensor([prep.src], device=device)
    x = model.src_embed(src).detach()  # (1, S, D)
    base = torch.zeros_like(x) if baseline_id is None else model.src_embed(torch.full_like(src, baseline_id)).detach()
    forward = output_log_prob(model, prep)
    T = len(prep.scored)
    per_pass = _rows_per_pass(model, prep, batch_size if plan is None else min(batch_size, plan.rows))
    rows = torch.arange(T, device=device)
    with record(model, interventions=changes, keep=False):
        with torch.no_grad():
            logp = forward(x.expand(T, -1, -1), rows).double().cpu().numpy()
            start = forward(base.expand(T, -1, -1), rows).double().cpu().numpy()
        if integrated:
            rows_ig = max(
                per_pass, min(GRADIENT_ROWS, LOGIT_BUDGET // (_positions(prep) * model.config.tgt_vocab_size))
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
