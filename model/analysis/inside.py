"""Inside one attention head, step by step, with the numbers a `capture(..., qkv=True)` recorded.

    scores_j = q . k_j                   raw dot product of the query with every key      (Tk,)
    scaled_j = scores_j / sqrt(d_k)      the paper's scale (Gemma: / sqrt(query_pre_attn_scalar)) (Tk,)
    capped_j = c tanh(scaled_j / c)      soft-capping of the logits (Gemma 2), when the model has it
             (+ bias_j for ALiBi / T5 relative models: the positional bias of this query and key j)
    masked_j = -inf where j may not be seen (decoder self-attention: keys after the query)
    a = softmax(masked)                  the attention weights, one row of the heatmap    (Tk,)
    head = sum_j a_j v_j                 this head's output                                (d_k,)
    out = Concat(head_1 .. head_h) W^O^T + b^O   the layer's attention output row         (D,)

Pure numpy over the captured arrays, plus `output_projection` to read W^O from a model and
`attention_cost` for the shapes and memory of a batch with your own numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from torch import nn

from i18n import M_

KINDS = ("encoder_self", "decoder_self", "cross")
# bounds of attention_cost's inputs: large enough for any real model, small enough for exact, readable numbers
COST_LIMITS = {"batch": 4096, "length": 1_048_576, "keys": 1_048_576, "d_model": 65_536, "heads": 1024}


def allowed_keys(kind: str, query: int, n_keys: int, window: int | None = None) -> np.ndarray:
    """(Tk,) True where query position `query` may attend: all keys, or keys <= query in decoder self-attention;
    in a local layer (window) only the keys j with query - j < window (the sliding window)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    keys = np.arange(n_keys)
    allowed = keys <= query if kind == "decoder_self" else np.ones(n_keys, dtype=bool)
    return allowed if window is None else allowed & (query - keys < window)


def head_settings(config, kind: str, layer: int) -> dict:
    """What a model's config changes in one head's steps: the scale (True, False or a number: config.score_scale),
    the soft-capping and the layer's sliding window (self-attention only)."""
    scale = config.score_scale(layer if kind != "cross" else None)
    window = config.window_of(layer) if kind != "cross" else None
    return dict(scale=scale, softcap=config.attn_softcap, window=window)


def softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last axis; -inf entries get weight exactly 0 (a row of only -inf is not allowed)."""
    shifted = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def entropy_bits(p: np.ndarray) -> float:
    """Shannon entropy of a distribution in bits: 0 for one-hot, log2(n) for uniform over n keys."""
    p = np.asarray(p, dtype=np.float64)
    nz = p[p > 0]
    return max(0.0, float(-(nz * np.log2(nz)).sum()))  # never -0.0


def default_focus(weights: np.ndarray) -> tuple[int, int, int]:
    """(layer, head, query) of the row of `weights` (L, H, Tq, Tk) with the most entropy: the page's first example.

    A trained head's row is often nearly one-hot (the reverse demo's cross-attention, layer 0, head 0, query 0),
    where the lesson of the scaling by 1/sqrt(d_k) (how much sharper the row would be without it) reads 0.00 bits;
    the most spread-out row shows it. Ties: the first in (layer, head, query) order."""
    if weights.ndim != 4 or weights.shape[2] == 0:
        raise ValueError(f"weights must be (layers, heads, queries, keys), got {weights.shape}")
    p = np.clip(weights.astype(np.float64), 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        bits = -np.where(p > 0, p * np.log2(p), 0.0).sum(axis=-1)  # (L, H, Tq)
    layer, head, query = np.unravel_index(int(np.argmax(bits)), bits.shape)
    return int(layer), int(head), int(query)


@dataclass
class HeadStep:
    """One query of one head, every intermediate of softmax(q K^T / sqrt(d_k) + mask) V. Tk keys, d_k dimensions."""

    query: np.ndarray  # (d_k,) q: the chosen query position's vector
    keys: np.ndarray  # (Tk, d_k) k_j, one row per key position
    values: np.ndarray  # (Tk, d_k) v_j
    raw: np.ndarray  # (Tk,) q . k_j
    scaled: np.ndarray  # (Tk,) raw / sqrt(d_k)
    allowed: np.ndarray  # (Tk,) bool, False where the mask sets the score to -inf
    masked: np.ndarray  # (Tk,) scaled, -inf where not allowed
    weights: np.ndarray  # (Tk,) softmax(masked): the row the attention page shows
    weights_unscaled: np.ndarray  # (Tk,) softmax of the raw scores (masked the same way): no 1/sqrt(d_k)
    # (a model that does not scale, T5: what the paper's 1/sqrt(d_k) would give instead)
    output: np.ndarray  # (d_k,) sum_j weights_j v_j
    bias: np.ndarray | None = None  # (Tk,) positional bias added to scaled before the mask (alibi, relative), or None
    scaled_scores: bool = True  # the model divides by sqrt(d_k) (False: T5, scaled == raw)
    capped: np.ndarray | None = None  # (Tk,) c * tanh(scaled / c): the soft-capped scores (Gemma 2), or None
    softcap: float | None = None  # c
    window: int | None = None  # the layer's sliding window (keys this far back or more are masked), or None
    divisor: float | None = None  # what the raw scores are divided by when it is not sqrt(d_k) (Gemma), or None

    @property
    def d_k(self) -> int:
        return self.query.shape[0]

    @property
    def scale(self) -> float:
        """sqrt(d_k), what the raw scores are divided by (1 for a model that does not scale them, T5)."""
        if self.divisor is not None:
            return self.divisor
        return math.sqrt(self.d_k) if self.scaled_scores else 1.0

    @property
    def entropy(self) -> float:
        return entropy_bits(self.weights)

    @property
    def entropy_unscaled(self) -> float:
        return entropy_bits(self.weights_unscaled)

    def products(self, key: int) -> np.ndarray:
        """(d_k,) q_i * k_i for key position `key`: their sum is the raw score, their signs show what drives it."""
        return self.query * self.keys[key]


def head_step(
    query: np.ndarray,
    keys: np.ndarray,
    values: np.ndarray,
    allowed: np.ndarray,
    bias: np.ndarray | None = None,
    scale: bool | float = True,
    softcap: float | None = None,
    window: int | None = None,
) -> HeadStep:
    """All steps of one head for one query vector (d_k,), keys and values (Tk, d_k), allowed (Tk,) bool,
    and the positional bias (Tk,) of ALiBi / T5 models (added to the scaled and the raw scores alike).
    scale=False: the model does not divide by sqrt(d_k) (T5); weights_unscaled then holds the scaled alternative;
    a number: the scores are multiplied by it (Gemma's query_pre_attn_scalar^-1/2). softcap c: the scaled scores
    become c tanh(scaled / c) before the bias and the mask (Gemma 2). window: recorded for the page (allowed has
    already left out the keys outside it)."""
    if query.ndim != 1 or keys.ndim != 2 or values.shape != keys.shape or keys.shape[1] != query.shape[0]:
        raise ValueError(
            f"query (d_k,), keys and values (Tk, d_k) expected; got {query.shape}, {keys.shape}, {values.shape}"
        )
    if allowed.shape != (keys.shape[0],) or not allowed.any():
        raise ValueError(f"allowed must be ({keys.shape[0]},) with at least one True, got {allowed.shape}")
    q, k, v = (a.astype(np.float64) for a in (query, keys, values))
    raw = k @ q  # (Tk,)
    factor = (1 / math.sqrt(q.shape[0]) if scale else 1.0) if isinstance(scale, bool) else float(scale)
    scaled = raw * factor if factor != 1.0 else raw

    def cap(x: np.ndarray) -> np.ndarray:
        return x if softcap is None else softcap * np.tanh(x / softcap)

    b = np.zeros_like(raw) if bias is None else np.asarray(bias, dtype=np.float64)
    if b.shape != raw.shape:
        raise ValueError(f"bias must be ({raw.shape[0]},), got {b.shape}")
    masked = np.where(allowed, cap(scaled) + b, -np.inf)
    weights = softmax(masked)
    other = raw if scale is not False else raw / math.sqrt(q.shape[0])
    unscaled = softmax(np.where(allowed, cap(other) + b, -np.inf))
    kept = None if bias is None else b
    divisor = None if isinstance(scale, bool) else 1 / float(scale)
    return HeadStep(q, k, v, raw, scaled, allowed, masked, weights, unscaled, weights @ v, kept, scale is not False,
                    None if softcap is None else cap(scaled), softcap, window, divisor)  # fmt: skip


def check_selection(cap, kind: str, layer: int, head: int, query: int) -> None:
    """ValueError naming what is out of range, for a capture recorded with qkv=True."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if kind not in cap.qkv:
        raise ValueError("this capture has no Q, K, V: record it with capture(..., qkv=True)")
    L, H, Tq, _ = cap.qkv[kind][0].shape
    for name, value, n in (("layer", layer, L), ("head", head, H), ("query", query, Tq)):
        if not 0 <= value < n:
            raise ValueError(f"{name} {value} is out of range: this {kind} attention has {n} (0 to {n - 1})")


def step_from_capture(
    cap,
    kind: str,
    layer: int,
    head: int,
    query: int,
    scale: bool | float = True,
    softcap: float | None = None,
    window: int | None = None,
) -> HeadStep:
    """HeadStep of query position `query` in head `head` of layer `layer` of one kind of attention; scale, softcap
    and window as the model has them (head_settings(config, kind, layer))."""
    check_selection(cap, kind, layer, head, query)
    q, k, v = (a[layer, head] for a in cap.qkv[kind])  # (Tq, dk), (Tk, dk), (Tk, dk)
    bias = getattr(cap, "position_bias", {}).get(kind)
    row = None if bias is None else bias[layer, head, query]  # (Tk,)
    allowed = allowed_keys(kind, query, k.shape[0], window)
    return head_step(q[query], k, v, allowed, row, scale, softcap, window)


def output_projection(model: nn.Module, kind: str, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """W^O (D, D) as nn.Linear stores it (out = concat @ W^O.T + b^O) and b^O (D,) of one attention module."""
    for k, i, module in model.attention_modules():
        if (k, i) == (kind, layer):
            w = module.out_proj.weight.detach().float().cpu().numpy()
            b = module.out_proj.bias
            return w, (np.zeros(w.shape[0], np.float32) if b is None else b.detach().float().cpu().numpy())
    raise ValueError(f"the model has no {kind} attention in layer {layer}")


@dataclass
class OutputStep:
    """Concat(head_1 .. head_h) W^O^T + b^O for one query position of one layer. H * d_k is d_model except where
    the head width is set apart (T5's d_kv)."""

    concat: np.ndarray  # (H * d_k,) the heads' outputs side by side, head 0 first
    output: np.ndarray  # (D,) the attention block's output row (before the residual and the norm)
    n_heads: int


def output_step(head_outputs: np.ndarray, w_o: np.ndarray, b_o: np.ndarray, query: int) -> OutputStep:
    """head_outputs (H, Tq, d_k) of one layer; w_o (D, H * d_k), b_o (D,): the output row of query position `query`."""
    H, _, dk = head_outputs.shape  # (H, Tq, dk)
    if w_o.ndim != 2 or w_o.shape[1] != H * dk or b_o.shape != (w_o.shape[0],):
        raise ValueError(f"W^O must be (D, {H * dk}) and b^O (D,), got {w_o.shape} and {b_o.shape}")
    concat = head_outputs[:, query, :].reshape(H * dk).astype(np.float64)  # (H, dk) -> (D,), head-major
    return OutputStep(concat, concat @ w_o.T.astype(np.float64) + b_o, H)


@dataclass
class AttentionCost:
    """Memory and arithmetic of one multi-head attention call on a batch (float32)."""

    batch: int
    length: int  # queries
    d_model: int
    heads: int
    d_k: int
    weight_elements: int  # B * h * T * T
    weight_bytes: int  # at 4 bytes per float32
    score_flops: int  # Q K^T and weights V: 2 * 2 * B * h * T * T * d_k multiply-adds counted as 2 flops
    projection_flops: int  # W^Q, W^K, W^V, W^O: 4 * 2 * B * T * d_model^2


def attention_cost(
    batch: int, length: int, d_model: int, heads: int, n_keys: int | None = None, d_head: int | None = None
) -> AttentionCost:
    """Exact integer cost of one attention call with `length` queries over n_keys keys (default: self-attention,
    n_keys = length); d_head: a head width set apart from d_model / heads (T5's d_kv). ValueError naming any
    input out of bounds."""
    values = {"batch": batch, "length": length, "d_model": d_model, "heads": heads}
    if n_keys is not None:
        values["keys"] = n_keys
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ValueError(M_("{name} must be a whole number, got {value}", name=name, value=repr(value)))
        if not 1 <= value <= COST_LIMITS[name]:
            raise ValueError(
                M_(
                    "{name} must be between 1 and {max}, got {value}",
                    name=name,
                    max=f"{COST_LIMITS[name]:,}",
                    value=f"{value:,}",
                )
            )
    if d_head is None and d_model % heads:
        raise ValueError(M_("d_model ({d}) must be divisible by the number of heads ({h})", d=d_model, h=heads))
    B, T, D, H = (int(v) for v in (batch, length, d_model, heads))
    S = T if n_keys is None else int(n_keys)
    dk = D // H if d_head is None else int(d_head)
    elements = B * H * T * S  # (B, h, T, S) weights
    projections = 2 * B * D * H * dk * (2 * T + 2 * S)  # W^Q and W^O on T rows, W^K and W^V on S rows
    return AttentionCost(B, T, D, H, dk, elements, 4 * elements, 2 * 2 * elements * dk, projections)


def length_scaling(
    batch: int, length: int, d_model: int, heads: int, factors=(0.25, 0.5, 1, 2, 4)
) -> list[AttentionCost]:
    """attention_cost at length x each factor (lengths kept within bounds, each at least 1, no repeats)."""
    lengths = sorted({min(COST_LIMITS["length"], max(1, round(length * f))) for f in factors})
    return [attention_cost(batch, t, d_model, heads) for t in lengths]
