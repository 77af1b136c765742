"""Independent reference implementation for the importer parity tests: The Annotated Transformer (harvardnlp)."""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn


def clones(module: nn.Module, n: int) -> nn.ModuleList:
    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])


class AnnLayerNorm(nn.Module):
    def __init__(self, features: int, eps: float = 1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)  # unbiased
        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2


def ann_attention(query, key, value, mask=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, value), p_attn


class AnnMultiHeadedAttention(nn.Module):
    def __init__(self, h: int, d_model: int):
        super().__init__()
        self.d_k = d_model // h
        self.h = h
        self.linears = clones(nn.Linear(d_model, d_model), 4)
        self.attn = None

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)  # same mask for every head
        nbatches = query.size(0)
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip(self.linears, (query, key, value))
        ]
        x, self.attn = ann_attention(query, key, value, mask=mask)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.linears[-1](x)


class AnnPositionwiseFeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.w_2(self.w_1(x).relu())


class AnnSublayerConnection(nn.Module):
    def __init__(self, size: int):
        super().__init__()
        self.norm = AnnLayerNorm(size)

    def forward(self, x, sublayer):
        return x + sublayer(self.norm(x))


class AnnEncoderLayer(nn.Module):
    def __init__(self, size, self_attn, feed_forward):
        super().__init__()
        self.self_attn = self_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(AnnSublayerConnection(size), 2)
        self.size = size

    def forward(self, x, mask):
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))
        return self.sublayer[1](x, self.feed_forward)


class AnnEncoder(nn.Module):
    def __init__(self, layer, n):
        super().__init__()
        self.layers = clones(layer, n)
        self.norm = AnnLayerNorm(layer.size)

    def forward(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class AnnDecoderLayer(nn.Module):
    def __init__(self, size, self_attn, src_attn, feed_forward):
        super().__init__()
        self.size = size
        self.self_attn = self_attn
        self.src_attn = src_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(AnnSublayerConnection(size), 3)

    def forward(self, x, memory, src_mask, tgt_mask):
        m = memory
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
        x = self.sublayer[1](x, lambda x: self.src_attn(x, m, m, src_mask))
        return self.sublayer[2](x, self.feed_forward)


class AnnDecoder(nn.Module):
    def __init__(self, layer, n):
        super().__init__()
        self.layers = clones(layer, n)
        self.norm = AnnLayerNorm(layer.size)

    def forward(self, x, memory, src_mask, tgt_mask):
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x)


class AnnEmbeddings(nn.Module):
    def __init__(self, d_model, vocab):
        super().__init__()
        self.lut = nn.Embedding(vocab, d_model)
        self.d_model = d_model

    def forward(self, x):
        return self.lut(x) * math.sqrt(self.d_model)


class AnnPositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return x + self.pe[:, : x.size(1)].requires_grad_(False)


class AnnGenerator(nn.Module):
    def __init__(self, d_model, vocab):
        super().__init__()
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, x):
        return F.log_softmax(self.proj(x), dim=-1)


class AnnEncoderDecoder(nn.Module):
    def __init__(self, encoder, decoder, src_embed, tgt_embed, generator):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_embed = src_embed
        self.tgt_embed = tgt_embed
        self.generator = generator

    def forward(self, src, tgt, src_mask, tgt_mask):
        return self.decoder(self.tgt_embed(tgt), self.encoder(self.src_embed(src), src_mask), src_mask, tgt_mask)


def ann_make_model(src_vocab, tgt_vocab, N=6, d_model=512, d_ff=2048, h=8, max_len=5000) -> AnnEncoderDecoder:
    c = copy.deepcopy
    attn = AnnMultiHeadedAttention(h, d_model)
    ff = AnnPositionwiseFeedForward(d_model, d_ff)
    position = AnnPositionalEncoding(d_model, max_len)
    model = AnnEncoderDecoder(
        AnnEncoder(AnnEncoderLayer(d_model, c(attn), c(ff)), N),
        AnnDecoder(AnnDecoderLayer(d_model, c(attn), c(attn), c(ff)), N),
        nn.Sequential(AnnEmbeddings(d_model, src_vocab), c(position)),
        nn.Sequential(AnnEmbeddings(d_model, tgt_vocab), c(position)),
        AnnGenerator(d_model, tgt_vocab),
    )
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    return model


def ann_run(model: AnnEncoderDecoder, src, tgt, pad: int):
    """(log-probs (B, T, V), {kind: [per-layer (B, H, q, k) maps]}) the way its training code masks."""
    src_mask = (src != pad).unsqueeze(-2)
    subsequent = torch.ones(1, tgt.size(1), tgt.size(1), dtype=torch.bool).tril()
    tgt_mask = (tgt != pad).unsqueeze(-2) & subsequent
    out = model(src, tgt, src_mask, tgt_mask)
    return model.generator(out), {
        "encoder_self": [layer.self_attn.attn for layer in model.encoder.layers],
        "decoder_self": [layer.self_attn.attn for layer in model.decoder.layers],
        "cross": [layer.src_attn.attn for layer in model.decoder.layers],
    }
