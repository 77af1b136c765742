"""Numbers behind the positional page's views of today's kinds: RoPE, ALiBi and T5's relative bias.

numpy out, float64 where a check reports a rounding-sized error; the formulas themselves live in model/network/positional.py
(the same functions the model runs), so what the page shows is what the model computes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .positional import (
    RelativePositionBias,
    alibi_bias,
    alibi_slopes,
    relative_position_bucket,
    rope_angles,
    rope_rotate,
)


def rope_frequencies(d_head: int, base: float = 10000.0) -> np.ndarray:
    """(d_head/2,) theta_i = base^(-2i/d_head): the angle pair i turns per position (radians)."""
    if d_head < 2 or d_head % 2:
        raise ValueError(f"d_head must be even and at least 2, got {d_head}")
    return np.exp(-np.log(base) * np.arange(0, d_head, 2) / d_head)


def rope_pair_path(vector: np.ndarray, positions: np.ndarray, theta: float) -> np.ndarray:
    """(P, 2): one pair (x, y) of a query or key rotated by m * theta for each position m (a circle)."""
    if vector.shape != (2,):
        raise ValueError(f"a pair has 2 coordinates, got shape {vector.shape}")
    angle = np.asarray(positions, dtype=np.float64) * theta
    c, s = np.cos(angle), np.sin(angle)
    x, y = vector
    return np.stack([x * c - y * s, x * s + y * c], axis=1)


def rotated(x: np.ndarray, positions: np.ndarray, base: float, layout: str = "interleaved") -> np.ndarray:
    """(P, d) the vector x (d,) rotated to each position, float64, with the model's own rope_rotate."""
    pos = torch.as_tensor(np.asarray(positions), dtype=torch.long)
    cos, sin = rope_angles(pos, x.shape[0], base, dtype=torch.float64)
    rows = torch.as_tensor(x, dtype=torch.float64).expand(len(pos), -1)
    return rope_rotate(rows, cos, sin, layout).numpy()


@dataclass
class RopeCheck:
    """q_m . k_n for one random q and k at every pair of positions 0..P-1, and how far it is from a function of m - n."""

    scores: np.ndarray  # (P, P) row m = query position, column n = key position
    max_spread: float  # largest spread of the scores along any diagonal m - n = const (0 up to float64 rounding)
    positions: int


def rope_check(
    d_head: int, length: int, base: float = 10000.0, layout: str = "interleaved", seed: int = 0
) -> RopeCheck:
    """The relative-position identity of RoPE checked numerically: R_m q . R_n k depends on m - n only."""
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal(d_head), rng.standard_normal(d_head)
    pos = np.arange(length)
    scores = rotated(q, pos, base, layout) @ rotated(k, pos, base, layout).T  # (P, P)
    spread = 0.0
    for d in range(-(length - 1), length):
        diag = np.diagonal(scores, offset=d)
        spread = max(spread, float(diag.max() - diag.min()))
    return RopeCheck(scores, spread, length)


def rope_decay(d_head: int, max_distance: int, base: float = 10000.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distances (N,), same-vector score (N,), Su et al.'s bound (N,)) for distances 0..max_distance.

    same-vector: q = k = all ones, q_m . k_n / (q . k) = mean_i cos((m - n) theta_i): 1 at distance 0, then falling
    (with ripples). bound: Su et al.'s eq. (37), (1 / (d/2)) sum_j |sum_{i<=j} e^{i (m-n) theta_i}|, the relative
    upper limit of the score, which decays as the distance grows."""
    theta = rope_frequencies(d_head, base)
    dist = np.arange(max_distance + 1, dtype=np.float64)
    angles = dist[:, None] * theta[None, :]  # (N, d/2)
    same = np.cos(angles).mean(axis=1)
    partial = np.abs(np.cumsum(np.exp(1j * angles), axis=1))  # (N, d/2)
    return dist, same, partial.mean(axis=1)


def alibi_matrix(n_heads: int, length: int, causal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(slopes (H,), bias (H, P, P)) for positions 0..P-1: -slope_h |i - j|; causal: NaN above the diagonal."""
    slopes = alibi_slopes(n_heads)
    pos = torch.arange(length)
    bias = alibi_bias(pos, pos, slopes).double().numpy() + 0.0  # no -0.0
    if causal:
        bias[:, np.triu_indices(length, 1)[0], np.triu_indices(length, 1)[1]] = np.nan
    return slopes.double().numpy(), bias


def relative_buckets(
    max_relative: int, bidirectional: bool, num_buckets: int = 32, max_distance: int = 128
) -> tuple[np.ndarray, np.ndarray]:
    """(relative positions -R..R, T5 bucket of each) with the model's own bucket function; relative = key - query."""
    rel = torch.arange(-max_relative, max_relative + 1)
    return rel.numpy(), relative_position_bucket(rel, bidirectional, num_buckets, max_distance).numpy()


def relative_bias_curves(model: nn.Module, max_relative: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each stack's learned bias against relative position (key - query): {"source"/"target": (rel (N,), (H, N))}.

    Empty for a model whose positions are not T5's relative bias."""
    out = {}
    for side, module in model.positional_encodings():
        if isinstance(module, RelativePositionBias):
            rel = torch.arange(-max_relative, max_relative + 1)
            buckets = relative_position_bucket(rel, module.bidirectional, module.num_buckets, module.max_distance)
            values = module.relative_attention_bias.weight.detach().double()[buckets]  # (N, H)
            out[side] = (rel.numpy(), values.T.cpu().numpy())
    return out
