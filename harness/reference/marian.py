"""Independent reference implementation for the importer parity tests: MarianMT (Hugging Face modeling_marian)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def marian_positions(n_pos: int, dim: int) -> torch.Tensor:
    """Half layout: angle[p, j] = p / 10000^(2*(j//2)/dim); sin of even j in the first half, cos of odd j after."""
    p = torch.arange(n_pos, dtype=torch.float64)[:, None]
    j = torch.arange(dim, dtype=torch.float64)[None, :]
    angle = p / torch.pow(10000.0, 2 * torch.div(j, 2, rounding_mode="floor") / dim)
    return torch.cat([torch.sin(angle[:, 0::2]), torch.cos(angle[:, 1::2])], dim=1).float()


MARIAN_ACT = {"relu": F.relu, "gelu": F.gelu, "swish": F.silu, "silu": F.silu}


def _marian_attn(state, prefix, h, kv, heads, bias_mask):
    """q scaled by head_dim**-0.5, additive mask; returns (out (B, Tq, D), weights (B, H, Tq, Tk))."""
    B, Tq, D = h.shape
    hd = D // heads

    def lin(name, x):
        return F.linear(x, state[f"{prefix}.{name}.weight"], state[f"{prefix}.{name}.bias"])

    q = (lin("q_proj", h) * hd**-0.5).view(B, Tq, heads, hd).transpose(1, 2)
    k = lin("k_proj", kv).view(B, -1, heads, hd).transpose(1, 2)
    v = lin("v_proj", kv).view(B, -1, heads, hd).transpose(1, 2)
    w = torch.softmax(q @ k.transpose(2, 3) + bias_mask, dim=-1)
    out = (w @ v).transpose(1, 2).reshape(B, Tq, D)
    return lin("out_proj", out), w


def marian_reference(state: dict, cfg: dict, src, tgt, src_keep, tgt_keep):
    """(logits (B, T, V), maps): MarianMTModel's forward written out, post-LN, no final norms."""
    D, heads = cfg["d_model"], cfg["encoder_attention_heads"]
    act = MARIAN_ACT[cfg["activation_function"]]
    scale = math.sqrt(D) if cfg["scale_embedding"] else 1.0
    emb = state["model.shared.weight"]
    pos = marian_positions(cfg["max_position_embeddings"], D)
    neg = torch.finfo(torch.float32).min

    def ln(x, name):
        return F.layer_norm(x, (D,), state[f"{name}.weight"], state[f"{name}.bias"], 1e-5)

    def ffn(x, p):
        return F.linear(
            act(F.linear(x, state[f"{p}.fc1.weight"], state[f"{p}.fc1.bias"])),
            state[f"{p}.fc2.weight"],
            state[f"{p}.fc2.bias"],
        )

    enc_mask = torch.where(src_keep[:, None, None, :], 0.0, neg)
    T = tgt.shape[1]
    causal = torch.ones(T, T, dtype=torch.bool).tril()[None, None] & tgt_keep[:, None, None, :]
    dec_mask = torch.where(causal, 0.0, neg)
    maps = {"encoder_self": [], "decoder_self": [], "cross": []}
    x = emb[src] * scale + pos[: src.shape[1]]
    for i in range(cfg["encoder_layers"]):
        p = f"model.encoder.layers.{i}"
        a, w = _marian_attn(state, f"{p}.self_attn", x, x, heads, enc_mask)
        x = ln(x + a, f"{p}.self_attn_layer_norm")
        x = ln(x + ffn(x, p), f"{p}.final_layer_norm")
        maps["encoder_self"].append(w)
    y = emb[tgt] * scale + pos[:T]
    for i in range(cfg["decoder_layers"]):
        p = f"model.decoder.layers.{i}"
        a, w = _marian_attn(state, f"{p}.self_attn", y, y, heads, dec_mask)
        y = ln(y + a, f"{p}.self_attn_layer_norm")
        maps["decoder_self"].append(w)
        a, w = _marian_attn(state, f"{p}.encoder_attn", y, x, heads, enc_mask)
        y = ln(y + a, f"{p}.encoder_attn_layer_norm")
        maps["cross"].append(w)
        y = ln(y + ffn(y, p), f"{p}.final_layer_norm")
    return y @ emb.T + state["final_logits_bias"], maps
