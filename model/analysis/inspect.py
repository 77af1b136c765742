"""What the model page shows: parameter counts, weight statistics, and the shapes inside attention."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from torch import nn

from i18n import N_


def parameter_counts(model: nn.Module) -> dict[str, int]:
    """Parameters per top-level part (embeddings, each encoder/decoder layer, norms, generator); shared tensors once."""
    counts: dict[str, int] = {}
    for name, p in model.named_parameters():  # named_parameters yields each shared tensor once
        parts = name.split(".")
        key = ".".join(parts[:3]) if parts[0] in ("encoder", "decoder") and parts[1] == "layers" else parts[0]
        counts[key] = counts.get(key, 0) + p.numel()
    return counts


@dataclass
class WeightStats:
    name: str
    shape: tuple[int, ...]
    mean: float
    std: float
    max_abs: float


def weight_stats(model: nn.Module) -> list[WeightStats]:
    """Mean, standard deviation and largest magnitude of every weight matrix and vector."""
    out = []
    for name, p in model.named_parameters():
        a = p.detach().float().cpu().numpy()
        out.append(WeightStats(name, tuple(a.shape), float(a.mean()), float(a.std()), float(np.abs(a).max())))
    return out


@dataclass
class ShapeStep:
    what: str  # the operation, in words (marked for translation: show it as _(what))
    formula: str  # as in the paper (the two with words are marked: show it as _(formula))
    shape: tuple[int, ...]  # the real shape for the current input


def attention_shape_walk(
    d_model: int, n_heads: int, n_queries: int, n_keys: int, batch: int = 1, d_head: int | None = None
) -> list[ShapeStep]:
    """The tensor shapes of one multi-head attention call, with the current input's numbers (d_head: a head width
    set apart from d_model / n_heads, T5's d_kv; the projections then map d_model to n_heads * d_head)."""
    dk = d_model // n_heads if d_head is None else d_head
    inner = n_heads * dk
    B, Tq, Tk, H = batch, n_queries, n_keys, n_heads
    return [
        ShapeStep(N_("query input"), "X", (B, Tq, d_model)),
        ShapeStep(N_("key/value input"), N_("Y (= X for self-attention)"), (B, Tk, d_model)),
        ShapeStep(N_("project queries"), "Q = X W^Q", (B, Tq, inner)),
        ShapeStep(N_("project keys and values"), "K = Y W^K, V = Y W^V", (B, Tk, inner)),
        ShapeStep(N_("split into heads"), "Q_h (view + transpose)", (B, H, Tq, dk)),
        ShapeStep(N_("split keys/values into heads"), "K_h, V_h", (B, H, Tk, dk)),
        ShapeStep(N_("scores"), "Q_h K_h^T / sqrt(d_k)", (B, H, Tq, Tk)),
        ShapeStep(N_("attention weights (what the heatmaps show)"), "softmax(scores + mask)", (B, H, Tq, Tk)),
        ShapeStep(N_("weighted values"), N_("weights V_h"), (B, H, Tq, dk)),
        ShapeStep(N_("concatenate heads"), "Concat(head_1..head_h)", (B, Tq, inner)),
        ShapeStep(N_("output projection"), "Concat(...) W^O", (B, Tq, d_model)),
    ]


def positional_tables(model: nn.Module) -> dict[str, np.ndarray]:
    """The (max_len, d_model) positional table of each side, as numpy."""
    return {side: module.table.detach().float().cpu().numpy() for side, module in model.positional_encodings()}
