"""Random softmax attention in the Capture layout, for the tests and benchmarks of figure and page builders that
need maps but no model; stock bertviz's HTML of such maps (the baseline of bertviz_view's size)."""

from __future__ import annotations

import numpy as np


def softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis (rows sum to 1; -inf entries get 0)."""
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def random_attention(L_enc=2, L_dec=2, H=3, S=5, T=4, seed=0, spread=1.0):
    """float32 (encoder_self (L_enc, H, S, S), decoder_self (L_dec, H, T, T) causal, cross (L_dec, H, T, S));
    `spread`: the logits' standard deviation (larger: more peaked rows)."""
    rng = np.random.default_rng(seed)
    enc = softmax(rng.normal(0, spread, (L_enc, H, S, S)))
    logits = rng.normal(0, spread, (L_dec, H, T, T))
    logits[..., np.triu(np.ones((T, T), bool), 1)] = -np.inf
    dec = softmax(logits)
    crs = softmax(rng.normal(0, spread, (L_dec, H, T, S)))
    return enc.astype(np.float32), dec.astype(np.float32), crs.astype(np.float32)


def stock_bertviz_html(view: str, arrays, tokens: list[str]) -> str:
    """bertviz's own head_view ("head") or model_view HTML of (encoder_self, decoder_self, cross), `tokens` on both
    sides."""
    import torch
    from bertviz import head_view, model_view

    per_layer = lambda a: [torch.from_numpy(layer[None]) for layer in a]  # noqa: E731 (1, H, q, k) each
    enc, dec, crs = arrays
    fn = head_view if view == "head" else model_view
    return fn(
        encoder_attention=per_layer(enc),
        decoder_attention=per_layer(dec),
        cross_attention=per_layer(crs),
        encoder_tokens=tokens,
        decoder_tokens=tokens,
        html_action="return",
    ).data
