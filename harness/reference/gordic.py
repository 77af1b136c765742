"""Independent reference implementation for the importer parity tests: gordicaleksa/pytorch-original-transformer."""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

from .annotated import clones


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
        trb = self.sublayers[1](
            trb, lambda t: self.src_multi_headed_attention(query=t, key=srb, value=srb, mask=src_mask)
        )
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
