"""The encoder-decoder Transformer of "Attention Is All You Need", written to be read.

    src ids -> embed * sqrt(d) + PE -> N x EncoderLayer -> memory
    tgt ids -> embed * sqrt(d) + PE -> N x DecoderLayer(memory) -> generator -> logits

Post-LN (the paper) and pre-LN blocks are one code path selected by `config.norm_first`.
`encode()` and `decode()` are usable separately; `decode()` takes an optional `DecoderCache` so greedy
decoding processes only the newest token per step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
from torch import nn

from .attention import KVCache, MultiHeadAttention
from .config import TransformerConfig
from .position_kinds.registry import kind as positional_kind
from .positional import (
    AttentionPositionalEncoding,
    SelfAttentionPositions,
)
from .sublayers import ACTIVATION_FNS, FeedForward, make_norm


def make_attention(config: TransformerConfig, layer: int | None = None) -> MultiHeadAttention:
    """One attention module; layer (self-attention only): its sliding window when the layer is local."""
    qk = {"head": (config.d_head, config.d_head), "all": (config.attention_width, config.kv_heads * config.d_head)}
    widths = qk.get(config.qk_norm)
    return MultiHeadAttention(
        config.d_model,
        config.n_heads,
        config.dropout,
        config.d_head,
        config.bias,
        config.score_scale(layer),
        config.n_kv_heads,
        config.qkv_bias,
        window=None if layer is None else config.window_of(layer),
        softcap=config.attn_softcap,
        qk_norms=None if widths is None else (make_norm(config, widths[0]), make_norm(config, widths[1])),
        qk_norm_per_head=config.qk_norm == "head",
    )


def residual(
    x: torch.Tensor,
    norm: nn.Module | None,
    sublayer: Callable,
    dropout: nn.Module,
    norm_first: bool,
    post: nn.Module | None = None,
) -> torch.Tensor:
    """Post-LN: LayerNorm(x + Sublayer(x)) as in the paper. Pre-LN: x + Sublayer(LayerNorm(x)). With a post norm
    (config.block_norms): x + Post(Sublayer(LayerNorm(x))) (Gemma 2/3's sandwich), or without a pre norm (norm None)
    x + Post(Sublayer(x)) (OLMo 2)."""
    if norm_first:
        h = sublayer(x if norm is None else norm(x))
        return x + dropout(h if post is None else post(h))
    return norm(x + dropout(sublayer(x)))


def block_norms(config: TransformerConfig, sublayers: int) -> tuple[list[nn.Module | None], list[nn.Module | None]]:
    """(pre norms, post norms) of a layer's sublayers as config.block_norms says: pre only (default), both
    (sandwich), or post only (output)."""
    pre = [None if config.block_norms == "output" else make_norm(config) for _ in range(sublayers)]
    post = [make_norm(config) if config.block_norms != "default" else None for _ in range(sublayers)]
    return pre, post


class EncoderLayer(nn.Module):
    def __init__(self, config: TransformerConfig, layer: int = 0):
        super().__init__()
        self.self_attn = make_attention(config, layer)
        self.ff = FeedForward(config) if config.feed_forward else None  # None: attention-only
        (self.norm1, self.norm2), (self.post_norm1, self.post_norm2) = block_norms(config, 2)
        if self.ff is None:
            self.norm2 = self.post_norm2 = None
        self.dropout = nn.Dropout(config.dropout)
        self.norm_first = config.norm_first

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None, positions: SelfAttentionPositions | None = None
    ) -> torch.Tensor:
        attend = lambda h: self.self_attn(h, h, mask, positions=positions)  # noqa: E731
        x = residual(x, self.norm1, attend, self.dropout, self.norm_first, self.post_norm1)
        if self.ff is None:
            return x
        return residual(x, self.norm2, self.ff, self.dropout, self.norm_first, self.post_norm2)


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder's memory, feed-forward; a decoder-only model's
    layers have no cross-attention (cross_attn and norm2 are None: norm1 before attention, norm3 before the FFN)."""

    def __init__(self, config: TransformerConfig, cross: bool = True, layer: int = 0):
        super().__init__()
        self.self_attn = make_attention(config, layer)
        self.cross_attn = make_attention(config) if cross else None
        self.ff = FeedForward(config) if config.feed_forward else None  # None: attention-only
        (self.norm1, self.norm2, self.norm3), (self.post_norm1, self.post_norm2, self.post_norm3) = block_norms(
            config, 3
        )
        if not cross:
            self.norm2 = self.post_norm2 = None
        if self.ff is None:
            self.norm3 = self.post_norm3 = None
        self.dropout = nn.Dropout(config.dropout)
        self.norm_first = config.norm_first

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None,
        self_mask: torch.Tensor | None,
        memory_mask: torch.Tensor | None,
        cache: LayerCache | None = None,
        positions: SelfAttentionPositions | None = None,
    ) -> torch.Tensor:
        self_cache = cache.self_attn if cache else None
        cross_cache = cache.cross_attn if cache else None
        x = residual(
            x,
            self.norm1,
            lambda h: self.self_attn(h, h, self_mask, self_cache, positions=positions),
            self.dropout,
            self.norm_first,
            self.post_norm1,
        )
        if self.cross_attn is not None:
            x = residual(
                x,
                self.norm2,
                lambda h: self.cross_attn(h, memory, memory_mask, cross_cache, static_kv=True),
                self.dropout,
                self.norm_first,
                self.post_norm2,
            )
        if self.ff is None:
            return x
        return residual(x, self.norm3, self.ff, self.dropout, self.norm_first, self.post_norm3)


def layer_positions(
    positions: SelfAttentionPositions | None, config: TransformerConfig, layer: int
) -> SelfAttentionPositions | None:
    """The positions layer `layer` reads: a local layer's own RoPE base (Gemma 3) where the stack computed one."""
    local = getattr(positions, "local", None)
    return local if local is not None and config.layer_kind(layer) == "local" else positions


class MLMTransform(nn.Module):
    """BERT's masked-LM head before its output layer: norm(act(dense(x)))."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.dense = nn.Linear(config.d_model, config.d_model)
        self.activation = ACTIVATION_FNS[config.activation]
        self.norm = make_norm(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.activation(self.dense(x)))


@dataclass
class LayerCache:
    self_attn: KVCache = field(default_factory=KVCache)
    cross_attn: KVCache = field(default_factory=KVCache)


@dataclass
class DecoderCache:
    """Per-layer keys and values of everything decoded so far (one per greedy-decoding call)."""

    layers: list[LayerCache]
    positions: torch.Tensor | None = None  # (T,) positions of the keys so far (rope / alibi / relative models)

    @property
    def length(self) -> int:
        k = self.layers[0].self_attn.k if self.layers else None
        return 0 if k is None else k.size(2)


class Stack(nn.Module):
    """N identical layers, then an optional final norm (pre-LN models need it); input_norm, when given,
    normalises embeddings + positions before the first layer (BART's layernorm_embedding)."""

    def __init__(self, layers: list[nn.Module], norm: nn.Module | None, input_norm: nn.Module | None = None):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.norm = norm
        self.input_norm = input_norm

    def start(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.input_norm is None else self.input_norm(x)


class Transformer(nn.Module):
    """The one model in its three shapes (config.shape): encoder-decoder, decoder-only (the decoder's stack with
    no cross-attention reads the whole sequence: tgt_embed, tgt_pe, decoder) and encoder-only (src_embed, src_pe,
    encoder). The stack a shape lacks is an empty Stack and its positional module None; one embedding table."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = config
        d = config.d_model
        both = config.shape == "encoder-decoder"
        self.src_embed = nn.Embedding(config.src_vocab_size, d)
        one_table = config.share_embeddings or not both
        self.tgt_embed = self.src_embed if one_table else nn.Embedding(config.tgt_vocab_size, d)
        # BERT's token types: row 0 (segment A) is added to every token (type_vocab_size 0: none)
        self.type_embed = nn.Embedding(config.type_vocab_size, d) if config.type_vocab_size else None
        self.src_pe = self._positional(config, bidirectional=True) if config.has_encoder else None
        self.tgt_pe = self._positional(config, bidirectional=False) if config.has_decoder else None
        self.embed_dropout = nn.Dropout(config.dropout)
        final = config.has_final_norm

        def stack(present: bool, layers: list[nn.Module]) -> Stack:
            if not present:
                return Stack([], None)
            return Stack(layers, make_norm(config) if final else None, make_norm(config) if config.embed_norm else None)

        self.encoder = stack(config.has_encoder, [EncoderLayer(config, i) for i in range(config.n_encoder_layers)])
        self.decoder = stack(
            config.has_decoder, [DecoderLayer(config, cross=both, layer=i) for i in range(config.n_decoder_layers)]
        )
        self.head_transform = None  # BERT's masked-LM head: dense, activation, norm before the output layer
        if config.output_head == "mlm":
            self.head_transform = MLMTransform(config)
        self.generator = (
            None if config.output_head == "none" else nn.Linear(d, config.tgt_vocab_size, bias=config.generator_bias)
        )
        self.reset_parameters()
        if config.tie_generator and self.generator is not None:
            self.generator.weight = self.tgt_embed.weight

    @staticmethod
    def _positional(config: TransformerConfig, bidirectional: bool) -> nn.Module:
        """The positional module of one stack (bidirectional: the encoder's, for T5's buckets): its kind's own
        factory (model/network/position_kinds/)."""
        return positional_kind(config.positional).make(config, bidirectional)

    def reset_parameters(self) -> None:
        """Xavier-uniform matrices (as the Annotated Transformer), N(0, 1/d) embeddings so that
        sqrt(d)-scaled embeddings have unit variance, zero biases."""
        for name, p in self.named_parameters():
            if "embed" in name:
                nn.init.normal_(p, std=self.config.d_model**-0.5)
            elif name.endswith("_pe.weight"):
                nn.init.normal_(p, std=0.02)
            elif name.endswith("relative_attention_bias.weight"):
                nn.init.normal_(p, std=self.config.d_model**-0.5)  # as T5's initializer
            elif p.dim() > 1:
                nn.init.xavier_uniform_(p)
            elif name.endswith("bias") and "norm" not in name:
                nn.init.zeros_(p)

    # -- the two halves -------------------------------------------------------------------------

    def embed(self, table: nn.Embedding, ids: torch.Tensor, embeds: torch.Tensor | None = None) -> torch.Tensor:
        """Token embeddings (B, T, D), multiplied by sqrt(d_model) unless the config says not to (plus BERT's
        token-type row 0 when the model has token types).

        embeds (B, T, D), when given, stands for the table's output `table(ids)` (transformers' inputs_embeds):
        gradient methods differentiate the model from there, through the same scale, positions and layers."""
        x = table(ids) if embeds is None else embeds
        if embeds is not None and embeds.shape[:2] != ids.shape:
            raise ValueError(f"embeds {tuple(embeds.shape)} do not match ids {tuple(ids.shape)}")
        x = x * math.sqrt(self.config.d_model) if self.config.scale_embeddings else x
        return x if self.type_embed is None else x + self.type_embed.weight[0]

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """The output head over hidden states (B, T, D) -> (B, T, V) (BERT's masked-LM transform first)."""
        if self.generator is None:
            raise ValueError("this model has no output layer (an encoder without a language-model head)")
        if self.head_transform is not None:
            x = self.head_transform(x)
        logits = self.generator(x)
        cap = self.config.final_softcap
        return logits if cap is None else torch.tanh(logits / cap) * cap  # Gemma's final soft-capping

    def source_mask(self, src: torch.Tensor) -> torch.Tensor | None:
        """(B, 1, 1, S) True on real source tokens, or None when nothing is padded."""
        keep = src != self.config.pad_id
        return None if bool(keep.all()) else keep[:, None, None, :]

    def target_mask(self, tgt: torch.Tensor, offset: int = 0) -> torch.Tensor | None:
        """(B, 1, T, offset+T): causal (query i sees keys <= offset+i) and, without a cache, no padded keys."""
        T = tgt.size(1)
        causal = torch.ones(T, offset + T, dtype=torch.bool, device=tgt.device).tril(diagonal=offset)
        if offset == 0 and self.config.shape == "encoder-decoder":  # decoder-only: a text may hold its pad id
            keep = tgt != self.config.pad_id
            if self.config.bos_id == self.config.pad_id:
                keep[:, 0] = True  # the first input is the start token, even where it is spelled <pad> (Marian)
            if not bool(keep.all()):
                return causal[None, None] & keep[:, None, None, :]
        return None if bool(causal.all()) else causal[None, None]

    def encode(self, src: torch.Tensor, embeds: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """src (B, S) ids -> memory (B, S, D) and the source padding mask (B, 1, 1, S) or None.

        embeds (B, S, D): the source embedding table's output to use instead of looking src up (before the
        sqrt(d_model) scale and the positions); src still gives the padding mask and the length."""
        mask = self.source_mask(src)
        x = self.embed_dropout(self.encoder.start(self.src_pe(self.embed(self.src_embed, src, embeds))))
        positions = None
        if isinstance(self.src_pe, AttentionPositionalEncoding):  # computed once, used by every layer
            pos = self.src_pe.positions(0, src.size(1), src.device)  # (S,)
            positions = self.src_pe.self_attention(pos, pos)
        for i, layer in enumerate(self.encoder.layers):
            x = layer(x, mask, layer_positions(positions, self.config, i))
        return (self.encoder.norm(x) if self.encoder.norm is not None else x), mask

    def decode(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        cache: DecoderCache | None = None,
        last_only: bool = False,
        embeds: torch.Tensor | None = None,
        hidden: bool = False,
        self_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """tgt (B, T) ids -> logits (B, T, V), or (B, 1, V) for the last position only when last_only.

        With a cache, tgt holds only the new tokens, placed after the cache.length already decoded.
        A decoder-only model takes no memory (its layers have no cross-attention): tgt is the whole sequence.
        embeds (B, T, D): the target embedding table's output to use instead of looking tgt up (as in encode).
        hidden: return what the output layer reads (B, T, D) instead of the logits (`logits(...)` of it, in blocks of
        positions, gives them: a long input's (T, V) logits are never held whole).
        self_mask (B, 1, T, offset + T) bool: the self-attention mask to use instead of target_mask(tgt, offset) (the
        pack's exported graphs pick one of two masks with an input).
        """
        offset = cache.length if cache is not None else 0
        x = self.embed(self.tgt_embed, tgt, embeds)
        x = self.embed_dropout(self.decoder.start(self.tgt_pe(x, offset=offset)))
        self_mask = self.target_mask(tgt, offset) if self_mask is None else self_mask
        positions = None
        if isinstance(self.tgt_pe, AttentionPositionalEncoding):  # computed once, used by every layer
            pos = self.tgt_pe.positions(offset, tgt.size(1), tgt.device)  # (T,) the new queries' positions
            keys = pos if cache is None or cache.positions is None else torch.cat([cache.positions, pos])
            if cache is not None:
                cache.positions = keys
            positions = self.tgt_pe.self_attention(pos, keys)
        for i, layer in enumerate(self.decoder.layers):
            layer_cache = cache.layers[i] if cache is not None else None
            x = layer(x, memory, self_mask, memory_mask, layer_cache, layer_positions(positions, self.config, i))
        if self.decoder.norm is not None:
            x = self.decoder.norm(x)
        if self.config.rescale_output:  # T5 v1.0: the tied output layer reads d_model^-0.5 * h
            x = x * self.config.d_model**-0.5
        x = x[:, -1:] if last_only else x
        return x if hidden else self.logits(x)

    def forward(self, src: torch.Tensor | None, tgt: torch.Tensor | None = None) -> torch.Tensor:
        """Teacher-forced logits (B, T, V) for decoder inputs tgt given sources src. Decoder-only: the logits of
        tgt alone (src is ignored); encoder-only: the output head over the encoded src (B, S, V)."""
        if not self.config.has_encoder:
            return self.decode(tgt)
        memory, mask = self.encode(src)
        if not self.config.has_decoder:
            return self.logits(memory)
        return self.decode(tgt, memory, mask)

    def new_cache(self, memory: torch.Tensor | None = None) -> DecoderCache:
        """An empty cache; with memory (B, S, D), each layer's cross-attention keys and values already in it
        (cross_cache): computed once per source, read by every step."""
        cache = DecoderCache([LayerCache() for _ in self.decoder.layers])
        if memory is not None:
            for layer, (k, v) in zip(cache.layers, self.cross_cache(memory)):
                layer.cross_attn = KVCache(k, v)
        return cache

    def cross_cache(self, memory: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Every decoder layer's cross-attention keys and values of memory (B, S, D): [(K, V)] of (B, H_kv, S, dk),
        what a cached decoding step reads instead of memory (an encoder-decoder's only)."""
        return [layer.cross_attn.keys_values(memory) for layer in self.decoder.layers]

    # -- what recording hooks attach to ------------------------------------------------------------

    def attention_probes(self) -> Iterator[tuple[str, int, nn.Module]]:
        for kind, i, module in self.attention_modules():
            yield kind, i, module.probe

    def lazy_probes(self) -> Iterator[tuple[str, int, nn.Module]]:
        """(kind, layer, probe) of every attention module's lazy probe (a lazy record's LazyAttention)."""
        for kind, i, module in self.attention_modules():
            yield kind, i, module.lazy_probe

    def attention_modules(self) -> Iterator[tuple[str, int, MultiHeadAttention]]:
        """(kind, layer, module) of every multi-head attention, in the order of attention_probes()."""
        for i, layer in enumerate(self.encoder.layers):
            yield "encoder_self", i, layer.self_attn
        for i, layer in enumerate(self.decoder.layers):
            yield "decoder_self", i, layer.self_attn
            if layer.cross_attn is not None:
                yield "cross", i, layer.cross_attn

    def vector_probes(self) -> Iterator[tuple[str, int, str, nn.Module]]:
        """(kind, layer, name, probe) for the Q, K, V and head-output probes of every attention module."""
        for kind, i, module in self.attention_modules():
            for name, probe in module.vector_probes().items():
                yield kind, i, name, probe

    def positional_encodings(self) -> Iterator[tuple[str, nn.Module]]:
        """("source", module) and/or ("target", module): the sides the model's shape has."""
        if self.src_pe is not None:
            yield "source", self.src_pe
        if self.tgt_pe is not None:
            yield "target", self.tgt_pe


def build_model(config: TransformerConfig, seed: int | None = None) -> Transformer:
    """A freshly initialised Transformer in eval mode (call .train() to train it)."""
    if seed is not None:
        torch.manual_seed(seed)
    return Transformer(config).eval()
