"""Scaled dot-product and multi-head attention (section 3.2 of the paper).

Masks are boolean and broadcast to (B, H, Tq, Tk): True means "this query may attend to this key".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .positional import SelfAttentionPositions
from .recording import is_recording


def subsequent_mask(size: int, device: torch.device | None = None) -> torch.Tensor:
    """(size, size) boolean mask, True on and below the diagonal: position i sees positions <= i."""
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout: float = 0.0,
    bias: torch.Tensor | None = None,
    scale: bool | float = True,
    softcap: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(d_k) + bias) v, returning (output, weights); scale=False leaves out the 1/sqrt(d_k) (T5),
    a number multiplies the scores instead (Gemma's query_pre_attn_scalar^-1/2); softcap c: the scaled scores become
    c * tanh(scores / c) before the bias and the mask (Gemma 2's attention logit soft-capping).

    q: (B, H, Tq, dk), k and v: (B, H, Tk, dk), mask broadcastable to (B, H, Tq, Tk), bias (ALiBi, T5) (H, Tq, Tk).
    Returns output (B, H, Tq, dk) and weights (B, H, Tq, Tk); masked keys get weight exactly 0.
    """
    scores = q @ k.transpose(-2, -1)  # (B, H, Tq, Tk)
    if scale is True:
        scores = scores / math.sqrt(q.size(-1))
    elif scale is not False:
        scores = scores * scale
    # -- families: soft-capping (Gemma 2) --
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    # -- end families --
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    dropped = F.dropout(weights, p=dropout) if dropout > 0 else weights
    return dropped @ v, weights


class AttentionProbe(nn.Module):
    """Identity on a tensor of the explicit attention path: the place recording hooks attach to.

    `probe` sees the (B, H, Tq, Tk) weights; `q_probe`, `k_probe`, `v_probe` the per-head queries
    (B, H, Tq, dk), keys and values (B, H, Tk, dk); `head_probe` each head's output (B, H, Tq, dk)
    before the heads are concatenated and projected by W^O; `bias_probe` the (1, H, Tq, Tk) positional bias added
    to the scores (ALiBi, T5 relative; not called for other kinds). They only run while somebody records.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


VECTOR_PROBES = ("q", "k", "v", "heads", "bias")  # probes on Q, K, V (after RoPE), heads' outputs, position bias


# -- families: the sliding window (Mistral, Gemma 2/3, Phi-3) --
def window_mask(n_queries: int, n_keys: int, window: int, device: torch.device | None = None) -> torch.Tensor:
    """(Tq, Tk) True where a query sees a key within the sliding window: the Tq queries are the last Tq of the Tk
    positions (self-attention, cached keys first), query at position p sees key j when p - j < window (keys after
    the query are the causal mask's to hide)."""
    query_pos = torch.arange(n_keys - n_queries, n_keys, device=device)[:, None]  # (Tq, 1)
    return query_pos - torch.arange(n_keys, device=device)[None, :] < window  # (Tq, Tk)


def with_window(
    mask: torch.Tensor | None, n_queries: int, n_keys: int, window: int | None, device
) -> torch.Tensor | None:
    """The module's mask: `mask` and, for a local layer (window set), its sliding window."""
    if window is None or (n_keys <= window and not torch.jit.is_tracing()):  # a traced graph keeps the band
        return mask
    band = window_mask(n_queries, n_keys, window, device)
    return band if mask is None else mask & band


def sdpa_scale(scale: bool | float) -> float | None:
    """scaled_dot_product_attention's `scale` for MultiHeadAttention's: None (1/sqrt(d_k)), 1 or the number."""
    return None if scale is True else 1.0 if scale is False else float(scale)


# -- end families --


def float_mask(mask: torch.Tensor | None, bias: torch.Tensor) -> torch.Tensor:
    """The bias (H, Tq, Tk) with -inf where the boolean mask forbids a key: one attn_mask for the fused path."""
    return bias if mask is None else torch.where(mask, bias, bias.new_full((), float("-inf")))


@dataclass
class KVCache:
    """Keys and values of one attention module across decoding steps, each (B, H, T, dk)."""

    k: torch.Tensor | None = None
    v: torch.Tensor | None = None
    positions: torch.Tensor | None = (
        None  # (T,) the keys' positions (decoder self-attention of a rope/alibi/relative model)
    )


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate Q, K, V and output projections (W^Q, W^K, W^V, W^O).

    d_head: each head's width (default d_model // n_heads; T5 sets it apart, so the heads' concatenation
    may be narrower or wider than d_model); bias: biases on the four projections (T5: none);
    scale: divide q.k by sqrt(d_head) (T5: no)."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        d_head: int | None = None,
        bias: bool = True,
        scale: bool = True,
        n_kv_heads: int | None = None,
        qkv_bias: bool | None = None,
        window: int | None = None,
        softcap: float | None = None,
        qk_norms: tuple[nn.Module, nn.Module] | None = None,
        qk_norm_per_head: bool = True,
    ):
        super().__init__()
        self.n_heads = n_heads
        self.n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        self.d_head = d_model // n_heads if d_head is None else d_head
        inner = n_heads * self.d_head
        kv_inner = self.n_kv_heads * self.d_head
        qkv_bias = bias if qkv_bias is None else qkv_bias
        self.q_proj = nn.Linear(d_model, inner, bias=qkv_bias)
        self.k_proj = nn.Linear(d_model, kv_inner, bias=qkv_bias)
        self.v_proj = nn.Linear(d_model, kv_inner, bias=qkv_bias)
        self.out_proj = nn.Linear(inner, d_model, bias=bias)
        self.dropout = dropout
        self.scale = scale
        # -- families: sliding window, soft-capping, q/k norms (per head over d_head, or over the whole projection) --
        self.window, self.softcap = window, softcap
        self.q_norm, self.k_norm = qk_norms if qk_norms is not None else (None, None)
        self.qk_norm_per_head = qk_norm_per_head
        # -- end families --
        self.probe = AttentionProbe()
        self.q_probe, self.k_probe, self.v_probe, self.head_probe, self.bias_probe = (
            AttentionProbe() for _ in VECTOR_PROBES
        )

    def vector_probes(self) -> dict[str, AttentionProbe]:
        """The probes on Q, K, V, the heads' outputs and the positional bias, by the names in VECTOR_PROBES."""
        probes = (self.q_probe, self.k_probe, self.v_probe, self.head_probe, self.bias_probe)
        return dict(zip(VECTOR_PROBES, probes))

    def keys_values(self, key_value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """key_value (B, Tk, D) -> K, V (B, H_kv, Tk, dk): the projections every query reads (before RoPE), the keys
        normalised where the model has q/k norms."""
        return (
            self.normed(self.k_norm, self.k_proj(key_value), self.n_kv_heads),
            self.split_heads(self.v_proj(key_value), self.n_kv_heads),
        )

    def queries(self, query: torch.Tensor) -> torch.Tensor:
        """query (B, Tq, D) -> Q (B, H, Tq, dk), normalised where the model has q/k norms (before RoPE)."""
        return self.normed(self.q_norm, self.q_proj(query), self.n_heads)

    def normed(self, norm: nn.Module | None, x: torch.Tensor, heads: int) -> torch.Tensor:
        """(B, T, heads * dk) -> (B, heads, T, dk), through the q or k norm: each head's vector (Gemma 3, Qwen3) or
        the whole projection before the split (OLMo 2)."""
        if norm is None:
            return self.split_heads(x, heads)
        if self.qk_norm_per_head:
            return norm(self.split_heads(x, heads))
        return self.split_heads(norm(x), heads)

    def split_heads(self, x: torch.Tensor, heads: int | None = None) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, heads or self.n_heads, self.d_head).transpose(1, 2)  # (B, H, T, dk)

    def expand_kv(self, x: torch.Tensor) -> torch.Tensor:
        """(B, H_kv, T, dk) -> (B, H, T, dk): query head h reads key/value head h // (H / H_kv) (grouped-query
        attention); unchanged when every query head has its own."""
        groups = self.n_heads // self.n_kv_heads
        return x if groups == 1 else x.repeat_interleave(groups, dim=1)

    def forward(
        self,
        query: torch.Tensor,
        key_value: torch.Tensor | None,
        mask: torch.Tensor | None = None,
        cache: KVCache | None = None,
        static_kv: bool = False,
        positions: SelfAttentionPositions | None = None,
    ) -> torch.Tensor:
        """query: (B, Tq, D); key_value: (B, Tk, D), ignored when a static cache already holds K and V.

        Grouped-query attention (n_kv_heads < n_heads): K and V have n_kv_heads heads (so has the cache); each is
        repeated for its group of query heads before the scores, so the probes see (B, H, Tk, dk) per query head.

        cache with static_kv=False (decoder self-attention): the new keys and values are appended.
        cache with static_kv=True (cross-attention): K and V are computed from key_value once, then reused.
        positions (self-attention of a rope / alibi / relative model): RoPE rotates q and the new keys (which sit at
        the query positions) before they enter the cache, so cached keys keep the rotation of their own position;
        the bias (H, Tq, Tk), computed by the stack for these queries and all keys, is added to the scores.
        """
        q = self.queries(query)  # (B, H, Tq, dk)
        bias = None
        if static_kv and cache is not None and cache.k is not None:
            k, v = cache.k, cache.v
        else:
            k, v = self.keys_values(key_value)  # (B, H_kv, Tk, dk) each
            if positions is not None:
                q, k, bias = positions.rotate(q), positions.rotate(k), positions.bias
            if cache is not None:
                if not static_kv and cache.k is not None:
                    k = torch.cat([cache.k, k], dim=2)
                    v = torch.cat([cache.v, v], dim=2)
                cache.k, cache.v = k, v
        k, v = self.expand_kv(k), self.expand_kv(v)  # (B, H, Tk, dk): the cache keeps the H_kv heads
        p = self.dropout if self.training else 0.0
        mask = with_window(mask, q.size(2), k.size(2), self.window, q.device)  # a local layer's band
        if is_recording():
            q, k, v = self.q_probe(q), self.k_probe(k), self.v_probe(v)
            if bias is not None:
                bias = self.bias_probe(bias[None])[0]  # recorded as (1, H, Tq, Tk)
            out, weights = attention(q, k, v, mask, dropout=p, bias=bias, scale=self.scale, softcap=self.softcap)
            self.probe(weights)
            out = self.head_probe(out)  # (B, H, Tq, dk)
        elif self.softcap is not None:  # the fused kernel has no soft-capping: the same math, explicitly
            out, _ = attention(q, k, v, mask, dropout=p, bias=bias, scale=self.scale, softcap=self.softcap)
        else:
            attn_mask = mask if bias is None else float_mask(mask, bias)
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=attn_mask, dropout_p=p, scale=sdpa_scale(self.scale)
            )
        B, H, Tq, dk = out.shape
        out = out.transpose(1, 2).reshape(B, Tq, H * dk)  # (B, Tq, D)
        return self.out_proj(out)
