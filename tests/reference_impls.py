"""Independent reference models for the importer parity tests, one per format.

Each is written here from that format's published definition, with its exact parameter names (so that
`state_dict()` has the keys a real checkpoint has) and its own math (its LayerNorm, its masking, its
PE table computed the way it computes it), and records its attention weights the way its code exposes
them. Nothing here imports this project's model code.
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import nn

# ---------------------------------------------------------------------------------------------------
# The Annotated Transformer (harvardnlp): make_model(src_vocab, tgt_vocab, N, d_model, d_ff, h)
# ---------------------------------------------------------------------------------------------------


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
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2) for lin, x in zip(self.linears, (query, key, value))
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


# ---------------------------------------------------------------------------------------------------
# gordicaleksa/pytorch-original-transformer: Transformer(model_dimension, src_vocab_size, ...)
# ---------------------------------------------------------------------------------------------------


class GorMultiHeadedAttention(nn.Module):
    def __init__(self, model_dimension, number_of_heads):
        super().__init__()
        self.head_dimension = int(model_dimension / number_of_heads)
        self.number_of_heads = number_of_heads
        self.qkv_nets = clones(nn.Linear(model_dimension, model_dimension), 3)
        self.out_projection_net = nn.Linear(model_dimension, model_dimension)
        self.softmax = nn.Softmax(dim=-1)
        self.attention_weights = None

    def forward(self, query, key, value, mask):
        b = query.shape[0]
        query, key, value = [
            net(x).view(b, -1, self.number_of_heads, self.head_dimension).transpose(1, 2)
            for net, x in zip(self.qkv_nets, (query, key, value))
        ]
        scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(self.head_dimension)
        if mask is not None:
            scores.masked_fill_(mask == torch.tensor(False), float("-inf"))
        weights = self.softmax(scores)
        self.attention_weights = weights
        out = torch.matmul(weights, value).transpose(1, 2).reshape(b, -1, self.number_of_heads * self.head_dimension)
        return self.out_projection_net(out)


class GorPositionwiseFeedForwardNet(nn.Module):
    def __init__(self, model_dimension, width_mult=4):
        super().__init__()
        self.linear1 = nn.Linear(model_dimension, width_mult * model_dimension)
        self.linear2 = nn.Linear(width_mult * model_dimension, model_dimension)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.linear2(self.relu(self.linear1(x)))


class GorSublayerLogic(nn.Module):
    def __init__(self, model_dimension):
        super().__init__()
        self.norm = nn.LayerNorm(model_dimension)

    def forward(self, x, sublayer_module):
        return x + sublayer_module(self.norm(x))


class GorEncoderLayer(nn.Module):
    def __init__(self, model_dimension, multi_headed_attention, pointwise_net):
        super().__init__()
        self.sublayers = clones(GorSublayerLogic(model_dimension), 2)
        self.multi_headed_attention = multi_headed_attention
        self.pointwise_net = pointwise_net
        self.model_dimension = model_dimension

    def forward(self, srb, src_mask):
        srb = self.sublayers[0](srb, lambda s: self.multi_headed_attention(query=s, key=s, value=s, mask=src_mask))
        return self.sublayers[1](srb, self.pointwise_net)


class GorDecoderLayer(nn.Module):
    def __init__(self, model_dimension, multi_headed_attention, pointwise_net):
        super().__init__()
        self.sublayers = clones(GorSublayerLogic(model_dimension), 3)
        self.trg_multi_headed_attention = copy.deepcopy(multi_headed_attention)
        self.src_multi_headed_attention = copy.deepcopy(multi_headed_attention)
        self.pointwise_net = pointwise_net
        self.model_dimension = model_dimension

    def forward(self, trb, srb, trg_mask, src_mask):
        trb = self.sublayers[0](trb, lambda t: self.trg_multi_headed_attention(query=t, key=t, value=t, mask=trg_mask))
        trb = self.sublayers[1](trb, lambda t: self.src_multi_headed_attention(query=t, key=srb, value=srb, mask=src_mask))
        return self.sublayers[2](trb, self.pointwise_net)


class GorEncoder(nn.Module):
    def __init__(self, encoder_layer, number_of_layers):
        super().__init__()
        self.encoder_layers = clones(encoder_layer, number_of_layers)
        self.norm = nn.LayerNorm(encoder_layer.model_dimension)

    def forward(self, x, src_mask):
        for layer in self.encoder_layers:
            x = layer(x, src_mask)
        return self.norm(x)


class GorDecoder(nn.Module):
    def __init__(self, decoder_layer, number_of_layers):
        super().__init__()
        self.decoder_layers = clones(decoder_layer, number_of_layers)
        self.norm = nn.LayerNorm(decoder_layer.model_dimension)

    def forward(self, x, srb, trg_mask, src_mask):
        for layer in self.decoder_layers:
            x = layer(x, srb, trg_mask, src_mask)
        return self.norm(x)


class GorEmbedding(nn.Module):
    def __init__(self, vocab_size, model_dimension):
        super().__init__()
        self.embeddings_table = nn.Embedding(vocab_size, model_dimension)
        self.model_dimension = model_dimension

    def forward(self, ids):
        return self.embeddings_table(ids) * math.sqrt(self.model_dimension)


class GorPositionalEncoding(nn.Module):
    def __init__(self, model_dimension, expected_max_sequence_length=5000):
        super().__init__()
        position_id = torch.arange(0, expected_max_sequence_length).unsqueeze(1)
        frequencies = torch.pow(10000.0, -torch.arange(0, model_dimension, 2, dtype=torch.float) / model_dimension)
        table = torch.zeros(expected_max_sequence_length, model_dimension)
        table[:, 0::2] = torch.sin(position_id * frequencies)
        table[:, 1::2] = torch.cos(position_id * frequencies)
        self.register_buffer("positional_encodings_table", table)

    def forward(self, x):
        return x + self.positional_encodings_table[: x.shape[1]]


class GorDecoderGenerator(nn.Module):
    def __init__(self, model_dimension, vocab_size):
        super().__init__()
        self.linear = nn.Linear(model_dimension, vocab_size)
        self.log_softmax = nn.LogSoftmax(dim=-1)

    def forward(self, x):
        return self.log_softmax(self.linear(x))


class GorTransformer(nn.Module):
    def __init__(self, model_dimension, src_vocab_size, trg_vocab_size, number_of_heads, number_of_layers):
        super().__init__()
        self.src_embedding = GorEmbedding(src_vocab_size, model_dimension)
        self.trg_embedding = GorEmbedding(trg_vocab_size, model_dimension)
        self.src_pos_embedding = GorPositionalEncoding(model_dimension)
        self.trg_pos_embedding = GorPositionalEncoding(model_dimension)
        mha = GorMultiHeadedAttention(model_dimension, number_of_heads)
        pwn = GorPositionwiseFeedForwardNet(model_dimension)
        self.encoder = GorEncoder(GorEncoderLayer(model_dimension, mha, pwn), number_of_layers)
        self.decoder = GorDecoder(GorDecoderLayer(model_dimension, mha, pwn), number_of_layers)
        self.decoder_generator = GorDecoderGenerator(model_dimension, trg_vocab_size)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def forward(self, src, trg, src_mask, trg_mask):
        srb = self.encoder(self.src_pos_embedding(self.src_embedding(src)), src_mask)
        trb = self.decoder(self.trg_pos_embedding(self.trg_embedding(trg)), srb, trg_mask, src_mask)
        return self.decoder_generator(trb)


def gor_run(model: GorTransformer, src, tgt, pad: int):
    """(log-probs (B, T, V), maps) with its data pipeline's masks: (B,1,1,S) and (B,1,T,T)."""
    src_mask = (src != pad).view(src.shape[0], 1, 1, -1)
    T = tgt.shape[1]
    trg_padding = (tgt != pad).view(tgt.shape[0], 1, 1, -1)
    no_look_forward = torch.triu(torch.ones((1, 1, T, T)) == 1).transpose(2, 3)
    trg_mask = trg_padding & no_look_forward
    out = model(src, tgt, src_mask, trg_mask)
    return out, {
        "encoder_self": [layer.multi_headed_attention.attention_weights for layer in model.encoder.encoder_layers],
        "decoder_self": [layer.trg_multi_headed_attention.attention_weights for layer in model.decoder.decoder_layers],
        "cross": [layer.src_multi_headed_attention.attention_weights for layer in model.decoder.decoder_layers],
    }


# ---------------------------------------------------------------------------------------------------
# The PyTorch translation tutorial: Seq2SeqTransformer around nn.Transformer (sequence-first)
# ---------------------------------------------------------------------------------------------------


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
    def __init__(self, num_encoder_layers, num_decoder_layers, emb_size, nhead, src_vocab_size, tgt_vocab_size, dim_feedforward=512):
        super().__init__()
        self.transformer = nn.Transformer(
            d_model=emb_size, nhead=nhead, num_encoder_layers=num_encoder_layers,
            num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward, dropout=0.0,
        )
        self.generator = nn.Linear(emb_size, tgt_vocab_size)
        self.src_tok_emb = TutTokenEmbedding(src_vocab_size, emb_size)
        self.tgt_tok_emb = TutTokenEmbedding(tgt_vocab_size, emb_size)
        self.positional_encoding = TutPositionalEncoding(emb_size)

    def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
        src_emb = self.positional_encoding(self.src_tok_emb(src))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
        outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None, src_padding_mask, tgt_padding_mask, memory_key_padding_mask)
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


# ---------------------------------------------------------------------------------------------------
# MarianMT (Hugging Face modeling_marian), as a function of its state_dict and config.json
# ---------------------------------------------------------------------------------------------------


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
        return F.linear(act(F.linear(x, state[f"{p}.fc1.weight"], state[f"{p}.fc1.bias"])), state[f"{p}.fc2.weight"], state[f"{p}.fc2.bias"])

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
