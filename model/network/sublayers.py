"""The position-wise pieces of a Transformer layer: the activations, the norms (LayerNorm, RMSNorm) and the
feed-forward layer, each applied to every position on its own."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .config import TransformerConfig

ACTIVATION_FNS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),  # Hugging Face's gelu_new (T5 v1.1, flan-T5)
    "silu": F.silu,
}


class StdNorm(nn.Module):
    """The Annotated Transformer's LayerNorm: weight * (x - mean) / (std + eps) + bias, unbiased std."""

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.weight * (x - mean) / (std + self.eps) + self.bias


class RMSNorm(nn.Module):
    """T5's layer norm: weight * x / sqrt(mean(x^2) + eps), no mean subtracted and no bias. plus_one: the weight is
    read as 1 + weight (Gemma stores it so; zeros are the identity)."""

    def __init__(self, d_model: int, eps: float = 1e-6, plus_one: bool = False):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(d_model) if plus_one else torch.ones(d_model))
        self.eps = eps
        self.plus_one = plus_one

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.float().pow(2).mean(-1, keepdim=True)
        normed = x.float() * torch.rsqrt(variance + self.eps)
        if self.plus_one:  # as Gemma: (x * (1 + w)) in float32, then the input's type
            return (normed * (1.0 + self.weight.float())).to(x.dtype)
        return self.weight * normed.to(x.dtype)


def make_norm(config: TransformerConfig, width: int | None = None) -> nn.Module:
    """The config's norm over `width` features (default d_model)."""
    d = config.d_model if width is None else width
    if config.norm == "std":
        return StdNorm(d, config.layer_norm_eps)
    if config.norm in ("rms", "rms_plus_one"):
        return RMSNorm(d, config.layer_norm_eps, plus_one=config.norm == "rms_plus_one")
    return nn.LayerNorm(d, eps=config.layer_norm_eps)


FF_BLOCK_NUMBERS = 2**22  # hidden numbers of the feed-forward layer computed at once (16 MB of float32)


class FeedForward(nn.Module):
    """FFN(x) = W2 act(W1 x + b1) + b2, applied to each position separately.

    Gated (config.ff_gated, T5 v1.1): W2 (act(W1 x) * W3 x), the linear branch W3 beside the activated one."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.linear1 = nn.Linear(config.d_model, config.d_ff, bias=config.bias)
        self.linear3 = nn.Linear(config.d_model, config.d_ff, bias=config.bias) if config.ff_gated else None
        self.linear2 = nn.Linear(config.d_ff, config.d_model, bias=config.bias)
        self.activation = ACTIVATION_FNS[config.activation]
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Each position on its own: a long input's positions go in blocks of at most FF_BLOCK_NUMBERS hidden
        numbers, so that a 4,096-token pass of Qwen2-0.5B holds one 16 MB block of the (T, d_ff) hidden layer, not
        three of 80 MB (the same numbers: nothing mixes positions)."""
        rows = max(1, FF_BLOCK_NUMBERS // self.linear1.out_features)
        B, T, D = x.shape
        if B * T <= rows:
            return self._positions(x)
        flat = x.reshape(B * T, D)
        return torch.cat([self._positions(flat[i : i + rows]) for i in range(0, B * T, rows)]).reshape(B, T, -1)

    def _positions(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.activation(self.linear1(x))  # (..., d_ff)
        if self.linear3 is not None:
            hidden = hidden * self.linear3(x)
        return self.linear2(self.dropout(hidden))
