"""Scaled dot-product and multi-head attention (section 3.2 of the paper).

Masks are boolean and broadcast to (B, H, Tq, Tk): True means "this query may attend to this key".
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .positional import SelfAttentionPositions
from .recording import active_recorder


def subsequent_mask(size: int, device: torch.device | None = None) -> torch.Tensor:
    """(size, size) boolean mask, True on and below the diagonal: position i sees positions <= i."""
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()


def attention_weights(
    q: torch.Tensor,
    k: torch.Tensor,
    mask: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    scale: bool | float = True,
    softcap: float | None = None,
    mask_from: int = 0,
) -> torch.Tensor:
    """softmax(q k^T / sqrt(d_k) + bias) with masked keys at exactly 0: the one score function of every map.

    The eager path (`attention`) and the lazy capture's row blocks (model/analysis/lazy_capture.py) both call it, so
    what changes the scores (a bias, a mask, the scale) changes both alike. q (..., Tq, dk), k (..., Tk, dk), mask
    (boolean, True: may attend) and bias broadcastable to (..., Tq, Tk); scale=False leaves out 1/sqrt(d_k) (T5), a
    number multiplies the scores instead (Gemma's query_pre_attn_scalar^-1/2); softcap c: the scaled scores become
    c * tanh(scores / c) before the bias and the mask (Gemma 2's attention logit soft-capping). mask_from: the mask
    covers keys mask_from.. only (every row sees the keys before: a causal block's visible columns need no mask).
    The scale multiplies q (Tq x dk numbers) rather than the scores (Tq x Tk): the same numbers when it is a power of
    two (1/sqrt(64) = 1/8), within a rounding of the last bit otherwise.
    Returns the weights (..., Tq, Tk)."""
    if scale is True:
        q = q / math.sqrt(q.size(-1))
    elif scale is not False:
        q = q * scale
    scores = q @ k.transpose(-2, -1)  # (..., Tq, Tk), a new tensor: changed in place below (one T x T at a time)
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    if bias is not None:
        scores = scores + bias if bias.dim() > scores.dim() else scores.add_(bias)
    if mask is not None:
        scores[..., mask_from:].masked_fill_(~mask, float("-inf"))
    return scores.softmax(dim=-1)


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
    """softmax(q k^T / sqrt(d_k) + bias) v, returning (output, weights); scale=False leaves out the 1/sqrt(d_k) (T5).

    q: (B, H, Tq, dk), k and v: (B, H, Tk, dk), mask broadcastable to (B, H, Tq, Tk), bias (ALiBi, T5) (H, Tq, Tk).
    Returns output (B, H, Tq, dk) and weights (B, H, Tq, Tk); masked keys get weight exactly 0.
    """
    weights = attention_weights(q, k, mask, bias, scale, softcap)
    dropped = F.dropout(weights, p=dropout) if dropout > 0 else weights
    return dropped @ v, weights


# -- the sliding window (Mistral, Gemma 2/3, Phi-3) and the scale of the fused kernel --
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


BIAS_BLOCK_NUMBERS = 2**22  # scores of one fused block when a bias is added: 16 MB of float32


def mask_rows(mask: torch.Tensor | None, start: int, stop: int) -> torch.Tensor | None:
    """Rows start..stop of a mask broadcast to (..., Tq, Tk) (a key-padding mask (..., 1, Tk) is every row's)."""
    if mask is None or mask.size(-2) == 1:
        return mask
    return mask[..., start:stop, :]


def plain_causal(mask: torch.Tensor | None, n_queries: int, n_keys: int) -> bool:
    """Whether a mask is exactly the causal one (query i sees keys j <= i, nothing padded, one for every batch row):
    the fused kernel then takes is_causal=True, several times faster on a CPU than the same mask as a tensor."""
    if mask is None or n_queries != n_keys or n_queries < 2 or mask.numel() != n_queries * n_keys:
        return False
    if torch.jit.is_tracing():  # a traced graph keeps its mask: the check's answer would be fixed in it
        return False
    seen = _CAUSAL_SEEN.get(id(mask))  # a stack's layers share one mask: checked once, not once a layer
    if seen is not None and seen[0]() is mask and seen[1] == mask._version:
        return seen[2]
    causal = torch.ones(n_queries, n_keys, dtype=torch.bool, device=mask.device).tril()
    answer = torch.equal(mask.reshape(n_queries, n_keys), causal)
    if len(_CAUSAL_SEEN) >= 8:
        _CAUSAL_SEEN.clear()
    _CAUSAL_SEEN[id(mask)] = (weakref.ref(mask), mask._version, answer)
    return answer


_CAUSAL_SEEN: dict[int, tuple] = {}  # id(mask) -> (a weak reference to it, its version, whether it is causal)


def fused_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    positions: SelfAttentionPositions | None,
    dropout: float = 0.0,
    scale: bool | float = True,
) -> torch.Tensor:
    """scaled_dot_product_attention (no weights kept), q (B, H, Tq, dk), k and v (B, H, Tk, dk) -> (B, H, Tq, dk).

    With a positional bias (ALiBi, T5) the queries go in row blocks, each with the bias of its rows only
    (positions.bias_rows), so that no (H, Tq, Tk) bias is held whole at long inputs; one block when it is small."""
    fused_scale = sdpa_scale(scale)
    if positions is None or not positions.has_bias:
        if plain_causal(mask, q.size(2), k.size(2)):
            return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True, scale=fused_scale)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, scale=fused_scale)
    Tq, Tk = q.size(2), k.size(2)
    rows = max(1, BIAS_BLOCK_NUMBERS // max(1, q.size(1) * Tk))
    out = []
    for start in range(0, Tq, rows):
        stop = min(Tq, start + rows)
        attn_mask = float_mask(mask_rows(mask, start, stop), positions.bias_rows(start, stop).to(q.dtype))
        out.append(
            F.scaled_dot_product_attention(
                q[:, :, start:stop], k, v, attn_mask=attn_mask, dropout_p=dropout, scale=fused_scale
            )
        )
    return out[0] if len(out) == 1 else torch.cat(out, dim=2)  # (B, H, Tq, dk)


class AttentionProbe(nn.Module):
    """Identity on a tensor of the explicit attention path: the place recording hooks attach to.

    `probe` sees the (B, H, Tq, Tk) weights; `q_probe`, `k_probe`, `v_probe` the per-head queries
    (B, H, Tq, dk), keys and values (B, H, Tk, dk); `head_probe` each head's output (B, H, Tq, dk)
    before the heads are concatenated and projected by W^O; `bias_probe` the (1, H, Tq, Tk) positional bias added
    to the scores (ALiBi, T5 relative; not called for other kinds). They only run while somebody records.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


@dataclass
class LazyAttention:
    """What one attention module keeps for the lazy capture (record(model, lazy=True)), batch item 0: enough to
    compute any of its maps later, exactly, in row blocks (model/analysis/lazy_capture.py).

    q (H, Tq, dk): the queries after RoPE; k (H_kv, Tk, dk): the keys after RoPE, one per key/value head (query head
    h reads key head h // (H / H_kv)); mask broadcastable to (1, Tq, Tk) or None (the module's own, not copied);
    positions: the stack's SelfAttentionPositions when it adds a bias to the scores (its bias is computed for a
    block of query rows on request), else None; scale: whether q.k is divided by sqrt(dk) (or the number it is
    multiplied by); softcap: the logit soft-cap or None; window: a local layer's sliding window (not in `mask`: the
    band is built for each block of rows), or None."""

    q: torch.Tensor
    k: torch.Tensor
    mask: torch.Tensor | None
    positions: SelfAttentionPositions | None
    scale: bool | float
    softcap: float | None = None
    window: int | None = None


VECTOR_PROBES = ("q", "k", "v", "heads", "bias")  # probes on Q, K, V (after RoPE), heads' outputs, position bias


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
        scale: bool | float = True,
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
        # sliding window, soft-capping, q/k norms (per head over d_head, or over the whole projection)
        self.window, self.softcap = window, softcap
        self.q_norm, self.k_norm = qk_norms if qk_norms is not None else (None, None)
        self.qk_norm_per_head = qk_norm_per_head
        self.probe = AttentionProbe()
        self.lazy_probe = AttentionProbe()  # sees a LazyAttention in the fused path of a lazy record
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
        if static_kv and cache is not None and cache.k is not None:
            k, v = cache.k, cache.v
        else:
            k, v = self.keys_values(key_value)  # (B, H_kv, Tk, dk) each
            if positions is not None:
                q, k = positions.rotate(q), positions.rotate(k)
            if cache is not None:
                if not static_kv and cache.k is not None:
                    k = torch.cat([cache.k, k], dim=2)
                    v = torch.cat([cache.v, v], dim=2)
                cache.k, cache.v = k, v
        biased = positions if positions is not None and positions.has_bias and not static_kv else None
        kv_heads = k  # (B, H_kv, Tk, dk): what the lazy capture keeps
        k, v = self.expand_kv(k), self.expand_kv(v)  # (B, H, Tk, dk): the cache keeps the H_kv heads
        p = self.dropout if self.training else 0.0
        own_mask = mask  # without the window: the lazy capture builds the band for each block of rows
        mask = with_window(mask, q.size(2), k.size(2), self.window, q.device)  # a local layer's band
        recorder = active_recorder()
        if recorder is not None and not recorder.lazy:  # the explicit path: its weights are recorded
            q, k, v = self.q_probe(q), self.k_probe(k), self.v_probe(v)
            bias = None
            if biased is not None:
                bias = self.bias_probe(biased.bias[None])[0]  # recorded as (1, H, Tq, Tk)
            out, weights = attention(q, k, v, mask, dropout=p, bias=bias, scale=self.scale, softcap=self.softcap)
            self.probe(weights)
            out = self.head_probe(out)  # (B, H, Tq, dk)
        else:
            if self.softcap is not None:  # the fused kernel has no soft-capping: the same math, explicitly
                bias = None if biased is None else biased.bias
                out, _ = attention(q, k, v, mask, dropout=p, bias=bias, scale=self.scale, softcap=self.softcap)
            else:
                out = fused_attention(q, k, v, mask, biased, dropout=p, scale=self.scale)  # (B, H, Tq, dk)
            if recorder is not None:  # a lazy record: the probes it asked for, then what a map needs (last: its
                if recorder.qkv:  # progress may stop the pass there, with this layer's vectors kept)
                    self.q_probe(q), self.k_probe(k), self.v_probe(v)
                    if biased is not None:
                        self.bias_probe(biased.bias[None])
                kept = None if own_mask is None else own_mask[0]
                self.lazy_probe(LazyAttention(q[0], kv_heads[0], kept, biased, self.scale, self.softcap, self.window))
                out = self.head_probe(out)  # (B, H, Tq, dk): switched-off heads are zeroed here
        B, H, Tq, dk = out.shape
        out = out.transpose(1, 2).reshape(B, Tq, H * dk)  # (B, Tq, D)
        return self.out_proj(out)
