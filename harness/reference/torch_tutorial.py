"""Independent reference implementation for the importer parity tests: The PyTorch translation tutorial's Seq2SeqTransformer."""

from __future__ import annotations

import math

import torch
from torch import nn


class TutPositionalEncoding(nn.Module):
    def __init__(self, emb_size: int, maxlen: int = 5000):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        self.register_buffer("pos_embedding", pos_embedding.unsqueeze(-2))

    def forward(self, token_embedding):
        return token_embedding + self.pos_embedding[: token_embedding.size(0), :]


class TutTokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, emb_size: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size

    def forward(self, tokens):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


class Seq2SeqTransformer(nn.Module):
    def __init__(
        self,
        num_encoder_layers,
        num_decoder_layers,
        emb_size,
        nhead,
        src_vocab_size,
        tgt_vocab_size,
        dim_feedforward=512,
    ):
        super().__init__()
        self.transformer = nn.Transformer(
            d_model=emb_size,
            nhead=nhead,
            num_encoder_layers=num_encoder_layers,
            num_decoder_layers=num_decoder_layers,
            dim_feedforward=dim_feedforward,
            dropout=0.0,
        )
        self.generator = nn.Linear(emb_size, tgt_vocab_size)
        self.src_tok_emb = TutTokenEmbedding(src_vocab_size, emb_size)
        self.tgt_tok_emb = TutTokenEmbedding(tgt_vocab_size, emb_size)
        self.positional_encoding = TutPositionalEncoding(emb_size)

    def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
        src_emb = self.positional_encoding(self.src_tok_emb(src))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
        outs = self.transformer(
            src_emb, tgt_emb, src_mask, tgt_mask, None, src_padding_mask, tgt_padding_mask, memory_key_padding_mask
        )
        return self.generator(outs)


def per_head_weights(mha_modules: list[nn.MultiheadAttention]) -> tuple[list[list[torch.Tensor]], list]:
    """Hooks that make each nn.MultiheadAttention return per-head weights and record them (B, H, q, k)."""
    records: list[list[torch.Tensor]] = [[] for _ in mha_modules]
    handles = []
    for i, mha in enumerate(mha_modules):

        def pre(module, args, kwargs):
            kwargs["need_weights"] = True
            kwargs["average_attn_weights"] = False
            return args, kwargs

        def post(module, args, kwargs, output, i=i):
            records[i].append(output[1])

        handles.append(mha.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(mha.register_forward_hook(post, with_kwargs=True))
    return records, handles


def tut_run(model: Seq2SeqTransformer, src, tgt, pad: int):
    """Batch-first ids in; its sequence-first call with the tutorial's masks; (logits (B, T, V), maps)."""
    src_sf, tgt_sf = src.T, tgt.T  # (S, B), (T, B)
    S, T = src_sf.shape[0], tgt_sf.shape[0]
    tgt_mask = torch.triu(torch.ones((T, T)) == 1).transpose(0, 1)
    tgt_mask = tgt_mask.float().masked_fill(tgt_mask == 0, float("-inf")).masked_fill(tgt_mask == 1, 0.0)
    src_mask = torch.zeros((S, S)).type(torch.bool)
    src_padding, tgt_padding = (src_sf == pad).T, (tgt_sf == pad).T
    enc = [layer.self_attn for layer in model.transformer.encoder.layers]
    dec_self = [layer.self_attn for layer in model.transformer.decoder.layers]
    cross = [layer.multihead_attn for layer in model.transformer.decoder.layers]
    records, handles = per_head_weights(enc + dec_self + cross)
    try:
        with _no_fastpath():
            logits = model(src_sf, tgt_sf, src_mask, tgt_mask, src_padding, tgt_padding, src_padding)
    finally:
        for h in handles:
            h.remove()
    n_enc, n_dec = len(enc), len(dec_self)
    maps = [r[-1] for r in records]
    return logits.transpose(0, 1), {
        "encoder_self": maps[:n_enc],
        "decoder_self": maps[n_enc : n_enc + n_dec],
        "cross": maps[n_enc + n_dec :],
    }


class _no_fastpath:
    """Turn off the fused nn.MultiheadAttention / TransformerEncoderLayer fast path for the block."""

    def __enter__(self):
        self.before = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(False)

    def __exit__(self, *exc):
        torch.backends.mha.set_fastpath_enabled(self.before)
