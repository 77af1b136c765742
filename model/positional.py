"""Positional encodings: the paper's fixed sinusoids, a learned table, and none at all.

The modules take token embeddings that are already scaled by sqrt(d_model) and return them with the
positional rows added. `rows(offset, length)` gives exactly the rows that are added, which is what the
capture hooks record.
"""

from __future__ import annotations

import math

import torch
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
        self.register_buffer("table", torch.zeros(max_len, d_model), persistent=False)

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
