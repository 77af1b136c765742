"""The protocol's three steps for single-file state_dict formats (Annotated, gordic, tutorial), shared, and their one
mapping: each is a post- or pre-LN encoder-decoder with sinusoid tables, told apart by its names (a `Layout`).

A state_dict format module defines NAME, TITLE, NOTES, SIGNATURE (keys only it holds), CONVENTIONS and LAYOUT (its
names, `Layout`), and takes the protocol's three functions from here: `detect, inspect, load = protocol(__name__)`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import ModuleType

import torch

from i18n import M_, join_messages

from ...network.transformer import Transformer
from ...text.tokenizer import Tokenizer
from ..checkpoint import CheckpointError
from .common import DEFAULT_HEADS, Converted, Mapper, assemble, chunk, layer_count, make_config, sinusoid_tables, where
from .conventions import build_tokenizer
from .source import CheckpointInfo, LoadOptions, Source, precision_note
from .vocab_files import VocabLists, VocabSpec, read_vocabulary


def head_choices(d_model: int) -> list[int]:
    return [h for h in range(1, min(d_model, 64) + 1) if d_model % h == 0]


def matches(state: Mapping[str, torch.Tensor], fmt: ModuleType) -> bool:
    """A key of its SIGNATURE, or a key of its encoder's layers that names its first attention projection."""
    lay = fmt.LAYOUT
    first = f".{lay.projections[0]}"
    return any(k in state for k in fmt.SIGNATURE) or any(
        k.startswith(f"{lay.layers[0]}.") and first in k for k in state
    )


def detect(src: Source, fmt: ModuleType) -> bool:
    return not src.is_dir and matches(src.weights().state, fmt)


def inspect(src: Source, fmt: ModuleType) -> CheckpointInfo:
    weights = src.weights()
    src_key, tgt_key = fmt.LAYOUT.embeddings
    missing = [k for k in (src_key, tgt_key) if k not in weights.state]
    if missing:
        raise CheckpointError(
            M_("{where}: missing keys: {keys}", where=where(src.name, fmt.TITLE), keys=", ".join(missing))
        )
    src_vocab, d_model = weights.state[src_key].shape
    choices = head_choices(d_model)
    default = DEFAULT_HEADS if DEFAULT_HEADS in choices else max(h for h in choices if h <= DEFAULT_HEADS)
    return CheckpointInfo(
        str(src.path),
        fmt.NAME,
        fmt.TITLE,
        True,
        True,
        d_model,
        src_vocab,
        weights.state[tgt_key].shape[0],
        head_choices=choices,
        default_n_heads=default,
        notes=join_messages(" ", filter(None, (fmt.NOTES, precision_note(weights.precision)))),
        metadata=weights.meta,
        precision=weights.precision,
    )


def protocol(module: str) -> tuple[Callable, Callable, Callable]:
    """detect, inspect and load of the format module named `module` (looked up when called)."""

    def fmt() -> ModuleType:
        return sys.modules[module]

    return (
        lambda src: detect(src, fmt()),
        lambda src: inspect(src, fmt()),
        lambda src, options: load(src, fmt(), options),
    )


def _vocab_lists(spec: VocabSpec | None) -> VocabLists | None:
    return None if spec is None else read_vocabulary(spec)


def load(src: Source, fmt: ModuleType, options: LoadOptions) -> tuple[Transformer, Tokenizer]:
    if src.is_dir:
        raise CheckpointError(
            M_("{name} is a folder; {format} checkpoints are single .pt/.pth files", name=src.name, format=fmt.TITLE)
        )
    weights = src.weights()
    place = where(src.name, fmt.TITLE)
    converted = convert(weights.state, DEFAULT_HEADS if options.n_heads is None else options.n_heads, place, fmt)
    both = _vocab_lists(options.vocab)
    src_lists = _vocab_lists(options.source_vocab) or both
    tgt_lists = _vocab_lists(options.target_vocab) or both
    c = converted.config
    tokenizer = build_tokenizer(fmt.CONVENTIONS, c.src_vocab_size, c.tgt_vocab_size, src_lists, tgt_lists)
    t = tokenizer.target
    converted.config = replace(
        c, pad_id=t.pad_id, bos_id=t.bos_id, eos_id=t.eos_id, extra={**c.extra, "precision": weights.precision}
    )
    converted.mapped = weights.mapped
    return assemble(converted, place), tokenizer


@dataclass(frozen=True)
class Layout:
    """Where a state_dict format keeps what this project's Transformer holds: its keys and its few settings."""

    embeddings: tuple[str, str]  # source and target token embeddings (multiplied by sqrt(d_model) in its forward)
    positions: tuple[str, ...]  # the sinusoid buffer of each side, or one for both; (1, L, d), (L, 1, d) or (L, d)
    layers: tuple[str, str]  # encoder and decoder layer lists: "<prefix>.<i>.<...>"
    attention: tuple[str, str, str]  # in a layer: encoder self-, decoder self- and cross-attention
    projections: tuple[str, str, str, str]  # in an attention: W_q, W_k, W_v, W_o (Linear names)
    feed_forward: tuple[str, str]  # in a layer: the two Linear of the feed-forward (ReLU)
    norm: str  # in a layer: the j-th norm ({j} from 0, {n} from 1)
    final_norms: tuple[str, str]  # the encoder's and the decoder's final norm
    generator: str  # the output Linear (logits)
    norm_first: bool  # pre-LN (True) or the paper's post-LN
    norm_kind: str = "layernorm"  # TransformerConfig.norm ("std": a_2 * (x - mean) / (std + eps) + b_2)
    norm_eps: float = 1e-5
    norm_params: tuple[str, str] = ("weight", "bias")  # a norm's scale and shift
    packed: bool = False  # W_q, W_k, W_v stacked in one "<projections[0]>_weight" / "_bias" (nn.MultiheadAttention)
    generator_bias: bool | None = True  # None: whether the state has one


def _attention(m: Mapper, lay: Layout, ours: str, theirs: str) -> None:
    for i, proj in enumerate(("q_proj", "k_proj", "v_proj")):
        if lay.packed:
            part = f" (rows {('W_q', 'W_k', 'W_v')[i]} of 3)"
            m.put(f"{ours}.{proj}.weight", f"{theirs}.{lay.projections[i]}_weight", chunk(i), part)
            m.put(f"{ours}.{proj}.bias", f"{theirs}.{lay.projections[i]}_bias", chunk(i), part)
        else:
            m.put_linear(f"{ours}.{proj}", f"{theirs}.{lay.projections[i]}")
    m.put_linear(f"{ours}.out_proj", f"{theirs}.{lay.projections[3]}")


def _norm(m: Mapper, lay: Layout, ours: str, theirs: str) -> None:
    m.put(f"{ours}.weight", f"{theirs}.{lay.norm_params[0]}")
    m.put(f"{ours}.bias", f"{theirs}.{lay.norm_params[1]}")


def convert(state: Mapping[str, torch.Tensor], n_heads: int, where: str, fmt: ModuleType) -> Converted:
    """The format's state as this project's Transformer's (fmt.LAYOUT: its names), every key used once."""
    lay, specials = fmt.LAYOUT, fmt.CONVENTIONS.target.specials
    enc, dec = lay.layers
    first_ff = f"{enc}.0.{lay.feed_forward[0]}.weight"
    m = Mapper(state, where)
    m.require(*lay.embeddings, *lay.positions, first_ff)
    src_vocab, d_model = state[lay.embeddings[0]].shape
    stored = {}
    for side, key in zip(("source", "target"), lay.positions, strict=False):
        pe = m.take(key)  # stored as (1, max_len, d_model), (max_len, 1, d_model) or (max_len, d_model)
        three = pe.dim() == 3
        stored[side] = (key, pe[0] if three and pe.size(0) == 1 else pe[:, 0] if three and pe.size(1) == 1 else pe)
    tables = sinusoid_tables(stored, d_model, "interleaved", where)
    tables.setdefault("target", tables["source"])  # one buffer for both sides
    n_enc, n_dec = layer_count(state, enc), layer_count(state, dec)
    config = make_config(
        where,
        src_vocab_size=src_vocab,
        tgt_vocab_size=state[lay.embeddings[1]].shape[0],
        d_model=d_model,
        n_heads=n_heads,
        d_ff=state[first_ff].shape[0],
        n_encoder_layers=n_enc,
        n_decoder_layers=max(n_dec, 1),
        dropout=0.0,
        norm_first=lay.norm_first,
        final_norm=True,
        positional="sinusoidal",
        pe_layout="interleaved",
        max_len=min(t.size(0) for t in tables.values()),
        norm=lay.norm_kind,
        layer_norm_eps=lay.norm_eps,
        activation="relu",
        scale_embeddings=True,
        generator_bias=f"{lay.generator}.bias" in state if lay.generator_bias is None else lay.generator_bias,
        pad_id=specials["pad"],
        bos_id=specials["bos"],
        eos_id=specials["eos"],
        extra={"imported_from": fmt.TITLE},
    )
    m.put("src_embed.weight", lay.embeddings[0])
    m.put("tgt_embed.weight", lay.embeddings[1])
    for stack, prefix, n, kinds in (
        ("encoder", enc, n_enc, lay.attention[:1]),
        ("decoder", dec, config.n_decoder_layers, lay.attention[1:]),
    ):
        for i in range(n):
            ours, theirs = f"{stack}.layers.{i}", f"{prefix}.{i}"
            for mine, kind in zip(("self_attn", "cross_attn"), kinds, strict=False):
                _attention(m, lay, f"{ours}.{mine}", f"{theirs}.{kind}")
            m.put_linear(f"{ours}.ff.linear1", f"{theirs}.{lay.feed_forward[0]}")
            m.put_linear(f"{ours}.ff.linear2", f"{theirs}.{lay.feed_forward[1]}")
            for j in range(len(kinds) + 1):
                _norm(m, lay, f"{ours}.norm{j + 1}", f"{theirs}.{lay.norm.format(j=j, n=j + 1)}")
    _norm(m, lay, "encoder.norm", lay.final_norms[0])
    _norm(m, lay, "decoder.norm", lay.final_norms[1])
    m.put_linear("generator", lay.generator, bias=config.generator_bias)
    m.finish()
    return Converted(config, m.out, m.origin, tables)
