"""Positional encodings: the paper's fixed sinusoids, a learned table, and none at all.

The modules take token embeddings that are already scaled by sqrt(d_model) and return them with the
positional rows added. `rows(offset, length)` gives exactly the rows that are added, which is what the
capture hooks record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


def sinusoidal_encoding(max_len: int, d_model: int, base: float = 10000.0, layout: str = "interleaved") -> torch.Tensor:
    """The (max_len, d_model) sinusoidal table of section 3.5.

    interleaved (paper, most code): PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i+1] = cos(pos / base^(2i/d)).
    half (fairseq, Marian): the d/2 sines first, then the d/2 cosines, same frequencies.
    Built in float64 and returned as float32: exp on an integer arange fails in some torch versions.
    """
    if d_model % 2:
        raise ValueError(f"d_model must be even for sinusoidal encoding, got {d_model}")
    if max_len < 1:
        raise ValueError(f"max_len must be positive, got {max_len}")
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d/2,)
    inv_freq = torch.exp(-math.log(base) * two_i / d_model)  # 1 / base^(2i/d)
    angles = position * inv_freq  # (max_len, d/2)
    table = torch.empty(max_len, d_model, dtype=torch.float64)
    if layout == "interleaved":
        table[:, 0::2] = torch.sin(angles)
        table[:, 1::2] = torch.cos(angles)
    elif layout == "half":
        table[:, : d_model // 2] = torch.sin(angles)
        table[:, d_model // 2 :] = torch.cos(angles)
    else:
        raise ValueError(f"layout must be 'interleaved' or 'half', got {layout!r}")
    return table.float()


def wavelengths(d_model: int, base: float = 10000.0) -> torch.Tensor:
    """Wavelength in positions of each dimension pair i: 2*pi*base^(2i/d), shape (d/2,)."""
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    return 2 * math.pi * torch.exp(math.log(base) * two_i / d_model)


def check_length(offset: int, length: int, max_len: int) -> None:
    if offset + length > max_len:
        raise ValueError(
            f"sequence reaches position {offset + length - 1}, but the positional encoding covers "
            f"positions 0..{max_len - 1} (max_len={max_len})"
        )


class SinusoidalPositionalEncoding(nn.Module):
    """Adds fixed sinusoids. The table is a non-persistent buffer: checkpoints do not store it."""

    def __init__(self, d_model: int, max_len: int, base: float = 10000.0, layout: str = "interleaved"):
        super().__init__()
        self.max_len = max_len
        self.register_buffer("table", sinusoidal_encoding(max_len, d_model, base, layout), persistent=False)

    def rows(self, offset: int, length: int) -> torch.Tensor:
        """The (length, d_model) rows for positions offset .. offset+length-1."""
        check_length(offset, length, self.max_len)
        return self.table[offset : offset + length]

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        # x: (B, T, D) scaled token embeddings of positions offset .. offset+T-1
        return x + self.rows(offset, x.size(1))


class LearnedPositionalEncoding(nn.Module):
    """Adds a trained (max_len, d_model) table, one row per absolute position."""

    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        self.max_len = max_len
        self.weight = nn.Parameter(torch.empty(max_len, d_model))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.weight, std=0.02)

    @property
    def table(self) -> torch.Tensor:
        return self.weight

    def rows(self, offset: int, length: int) -> torch.Tensor:
        check_length(offset, length, self.max_len)
        return self.weight[offset : offset + length]

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        return x + self.rows(offset, x.size(1))


class NoPositionalEncoding(nn.Module):
    """Adds nothing: the model sees the token embeddings alone (a bag of tokens, up to the causal mask).

    `rows` and `table` are zeros, so recording and the positional page read it like the other kinds.
    The zero table is a non-persistent buffer: checkpoints store nothing for it.
    """

    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        self.max_len = max_len
        # one row of zeros seen max_len times: no memory for the table of a long-context model
        self.register_buffer("table", torch.zeros(1, d_model).expand(max_len, d_model), persistent=False)

    def rows(self, offset: int, length: int) -> torch.Tensor:
        check_length(offset, length, self.max_len)
        return self.table[offset : offset + length]

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        check_length(offset, x.size(1), self.max_len)
        return x


def relative_position_map(offset: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The fixed (d_model, d_model) matrix M_k with PE(p + k) = M_k @ PE(p) for every p (interleaved layout).

    Block diagonal: each (sin, cos) pair of frequency w is rotated by the angle k*w,
    [[cos kw, sin kw], [-sin kw, cos kw]], which is why attention can read relative offsets linearly.
    """
    inv_freq = 2 * math.pi / wavelengths(d_model, base)  # (d/2,) the frequencies w_i
    angle = offset * inv_freq
    c, s = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    idx = torch.arange(0, d_model, 2)
    m[idx, idx], m[idx, idx + 1] = c, s
    m[idx + 1, idx], m[idx + 1, idx + 1] = -s, c
    return m.float()


# -- positions inside self-attention: RoPE, ALiBi, T5's relative bias ------------------------------------------
#
# These kinds add nothing to the embeddings (their `rows` and `table` are zeros, as for "none", so every view of
# the added rows reads them like the other kinds). Each stack asks its module once per pass for a
# `SelfAttentionPositions` of its query and key positions and hands it to every self-attention layer of the stack:
# RoPE rotates q and the new keys there, ALiBi and T5 add their (H, Tq, Tk) bias to the scores before the softmax.
# Cross-attention gets none of them (queries and keys count positions in different sequences).


def rope_angles(
    positions: torch.Tensor, d_head: int, base: float = 10000.0, dtype: torch.dtype = torch.float32
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of m * theta_i, theta_i = base^(-2i/d_head), each (T, d_head/2) in dtype, for positions m (T,).

    Built in float64 (positions in the thousands times the fast frequencies lose digits in float32)."""
    two_i = torch.arange(0, d_head, 2, dtype=torch.float64, device=positions.device)
    theta = torch.exp(-math.log(base) * two_i / d_head)  # (d_head/2,)
    angles = positions.to(torch.float64)[:, None] * theta[None, :]  # (T, d_head/2)
    return torch.cos(angles).to(dtype), torch.sin(angles).to(dtype)


def rope_rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str = "interleaved") -> torch.Tensor:
    """Rotate each pair of x's last axis by its angle: (a, b) -> (a cos - b sin, a sin + b cos).

    x (..., T, d_head); cos, sin (T, d_head/2). interleaved: the pairs are dims (2i, 2i+1) as in Su et al.;
    half: dims (i, i + d_head/2), the "rotate_half" of GPT-NeoX and Hugging Face LLaMA."""
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    if layout == "half":
        a, b = x.chunk(2, dim=-1)  # (..., T, d/2) each
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
    a, b = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """(H,) ALiBi's head slopes: 2^(-8h/H) for h = 1..H when H is a power of 2 (1/2, 1/4, ... 1/256 for 8 heads).

    Other H, as the paper's code: the n = 2^floor(log2 H) slopes of n heads, then every other slope of 2n heads
    (2^(-4/n), 2^(-12/n), ...) until there are H."""

    def powers(n: int) -> list[float]:
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    n = 2 ** int(math.floor(math.log2(n_heads)))
    slopes = powers(n) + powers(2 * n)[0::2][: n_heads - n]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_bias(query_pos: torch.Tensor, key_pos: torch.Tensor, slopes: torch.Tensor) -> torch.Tensor:
    """(H, Tq, Tk) -slope_h * |i - j| for query positions i (Tq,) and key positions j (Tk,).

    The paper is causal (keys j <= i, distance i - j); the encoder here uses the symmetric |i - j|, and so does the
    decoder, where the causal mask hides every key with j > i, so its visible scores get exactly the paper's bias."""
    distance = (query_pos[:, None] - key_pos[None, :]).abs().to(slopes.dtype)  # (Tq, Tk)
    return -slopes.to(distance.device)[:, None, None] * distance[None]


def relative_position_bucket(
    relative_position: torch.Tensor, bidirectional: bool = True, num_buckets: int = 32, max_distance: int = 128
) -> torch.Tensor:
    """T5's bucket of each relative position (key position - query position), as Hugging Face's
    `T5Attention._relative_position_bucket`: same arguments, same integer result.

    Bidirectional (encoder): half the buckets for keys after the query. In each direction the first half of the
    buckets are the exact distances 0 .. max_exact - 1, the rest log-spaced up to max_distance; farther keys share
    the last bucket. Unidirectional (decoder): keys after the query (masked anyway) fall into bucket 0."""
    buckets = torch.zeros_like(relative_position, dtype=torch.long)
    if bidirectional:
        num_buckets //= 2
        buckets += (relative_position > 0).to(torch.long) * num_buckets
        distance = relative_position.abs()
    else:
        distance = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = distance < max_exact
    large = max_exact + (
        torch.log(distance.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(is_small, distance, large)


@dataclass
class AlibiRows:
    """ALiBi's bias for query rows start..stop and some heads: (h, rows, Tk) (a value, so that a capture that holds
    it can be pickled)."""

    slopes: torch.Tensor  # (H,)
    query_pos: torch.Tensor  # (Tq,)
    key_pos: torch.Tensor  # (Tk,)

    def __call__(self, start: int, stop: int | None, heads) -> torch.Tensor:
        return alibi_bias(self.query_pos[start:stop], self.key_pos, self.slopes[heads].reshape(-1))


@dataclass
class RelativeRows:
    """T5's relative bias for query rows start..stop and some heads: (h, rows, Tk), looked up in `weight` (buckets,
    H) for the bucket of key - query position."""

    weight: torch.Tensor  # (buckets, H)
    bidirectional: bool
    num_buckets: int
    max_distance: int
    query_pos: torch.Tensor  # (Tq,)
    key_pos: torch.Tensor  # (Tk,)

    def __call__(self, start: int, stop: int | None, heads) -> torch.Tensor:
        relative = self.key_pos[None, :] - self.query_pos[start:stop, None]  # (rows, Tk) memory - context, as T5
        buckets = relative_position_bucket(relative, self.bidirectional, self.num_buckets, self.max_distance)
        table = self.weight[:, heads].reshape(self.num_buckets, -1)  # (buckets, h)
        return F.embedding(buckets, table).permute(2, 0, 1)  # (h, rows, Tk)


class IndexProbe(nn.Module):
    """Identity on the (T,) position indices a stack uses: where an intervention (off, shuffled, shifted) hooks in."""

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        return positions


class SelfAttentionPositions:
    """What one stack's self-attention layers receive in one pass: RoPE's angles for the queries (and the new keys,
    which sit at the same positions) and/or the (H, Tq, Tk) bias added to the scores before the softmax.

    The bias is given whole (`bias`) or as `rows_bias(start, stop, heads)` -> (h, stop - start, Tk) (stop None:
    to the last row): the bias of
    query rows start..stop for the heads selected (an index or slice of H), computed from the positional module on
    request, so that a long input's fused pass and the lazy capture's maps never hold (H, Tq, Tk) at once."""

    def __init__(
        self,
        cos: torch.Tensor | None = None,
        sin: torch.Tensor | None = None,
        bias: torch.Tensor | None = None,
        layout: str = "interleaved",
        rows_bias=None,
    ):
        self.cos, self.sin, self.layout = cos, sin, layout
        self._bias, self.rows_bias = bias, rows_bias

    @property
    def has_bias(self) -> bool:
        return self._bias is not None or self.rows_bias is not None

    @property
    def bias(self) -> torch.Tensor | None:
        """(H, Tq, Tk) the whole bias (computed once on first use), or None without one."""
        if self._bias is None and self.rows_bias is not None:
            self._bias = self.rows_bias(0, None, slice(None))  # None: no length fixed in a traced graph
        return self._bias

    def bias_rows(self, start: int, stop: int, heads=slice(None)) -> torch.Tensor:
        """(h, stop - start, Tk): the bias of query rows start..stop for `heads` (an index list or slice of H)."""
        if self._bias is not None:
            return self._bias[heads, start:stop]
        return self.rows_bias(start, stop, heads)
        self.local: SelfAttentionPositions | None = None  # what local layers read instead (Gemma 3's own RoPE base)

    def rotate(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, H, Tq, dk) rotated by the query positions (unchanged without RoPE). Partial RoPE (angles for
        fewer than dk/2 pairs): the first 2 * pairs dims rotate, the rest pass unchanged."""
        if self.cos is None:
            return x
        rotated = 2 * self.cos.size(-1)
        if rotated == x.size(-1):
            return rope_rotate(x, self.cos, self.sin, self.layout)
        head = rope_rotate(x[..., :rotated], self.cos, self.sin, self.layout)
        return torch.cat([head, x[..., rotated:]], dim=-1)


class AttentionPositionalEncoding(NoPositionalEncoding):
    """Base of rope / alibi / relative: adds nothing to the embeddings, gives the stack its SelfAttentionPositions."""

    def __init__(self, d_model: int, max_len: int):
        super().__init__(d_model, max_len)
        self.index_probe = IndexProbe()

    def positions(self, offset: int, length: int, device: torch.device | None = None) -> torch.Tensor:
        """(length,) long: positions offset .. offset+length-1, as an intervention may have changed them."""
        check_length(offset, length, self.max_len)
        return self.index_probe(torch.arange(offset, offset + length, device=device))

    def self_attention(self, query_pos: torch.Tensor, key_pos: torch.Tensor) -> SelfAttentionPositions:
        raise NotImplementedError


class RotaryPositionalEncoding(AttentionPositionalEncoding):
    """RoPE (Su et al. 2021): q and k of every self-attention head rotated pairwise by m * base^(-2i/d_head)."""

    def __init__(self, d_model: int, max_len: int, n_heads: int, base: float = 10000.0, layout: str = "interleaved"):
        super().__init__(d_model, max_len)
        self.d_head, self.base, self.layout = d_model // n_heads, base, layout
        self.local_base: float | None = None  # the local (sliding-window) layers' own base (Gemma 3), or None

    def self_attention(self, query_pos: torch.Tensor, key_pos: torch.Tensor) -> SelfAttentionPositions:
        cos, sin = rope_angles(query_pos, self.d_head, self.base)
        positions = SelfAttentionPositions(cos, sin, layout=self.layout)
        if self.local_base is not None:
            positions.local = SelfAttentionPositions(
                *rope_angles(query_pos, self.d_head, self.local_base), layout=self.layout
            )
        return positions


class AlibiPositionalEncoding(AttentionPositionalEncoding):
    """ALiBi (Press et al. 2022): -slope_h * |i - j| added to head h's scores; no parameters."""

    def __init__(self, d_model: int, max_len: int, n_heads: int):
        super().__init__(d_model, max_len)
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)

    def self_attention(self, query_pos: torch.Tensor, key_pos: torch.Tensor) -> SelfAttentionPositions:
        return SelfAttentionPositions(rows_bias=AlibiRows(self.slopes, query_pos, key_pos))


class RelativePositionBias(AttentionPositionalEncoding):
    """T5's relative bias: a learned scalar per (bucket, head) in `relative_attention_bias.weight` (buckets, H),
    looked up once per pass for the bucket of key - query and added to every self-attention layer of the stack."""

    def __init__(
        self, d_model: int, max_len: int, n_heads: int, bidirectional: bool, num_buckets: int, max_distance: int
    ):
        super().__init__(d_model, max_len)
        self.bidirectional, self.num_buckets, self.max_distance = bidirectional, num_buckets, max_distance
        self.relative_attention_bias = nn.Embedding(num_buckets, n_heads)

    def buckets(self, query_pos: torch.Tensor, key_pos: torch.Tensor) -> torch.Tensor:
        """(Tq, Tk) bucket of key position - query position."""
        relative = key_pos[None, :] - query_pos[:, None]  # (Tq, Tk) memory_position - context_position, as T5
        return relative_position_bucket(relative, self.bidirectional, self.num_buckets, self.max_distance)

    def self_attention(self, query_pos: torch.Tensor, key_pos: torch.Tensor) -> SelfAttentionPositions:
        rows = RelativeRows(self.relative_attention_bias.weight, self.bidirectional, self.num_buckets,
                            self.max_distance, query_pos, key_pos)  # fmt: skip
        return SelfAttentionPositions(rows_bias=rows)
