"""The Annotated Transformer (harvardnlp): a plain state_dict of `make_model(src_vocab, tgt_vocab, N, d_model, d_ff, h)`.

Its model, and how it maps here:
    src_embed = Sequential(Embeddings (lut, * sqrt(d_model)), PositionalEncoding (buffer pe (1, max_len, d)))
    encoder.layers.i: self_attn.linears.0..3 (W_q, W_k, W_v, W_o), feed_forward.w_1/w_2 (ReLU),
                      sublayer.0/1.norm (a_2, b_2): pre-LN, x + Sublayer(LayerNorm(x))
    decoder.layers.i: self_attn, src_attn (-> cross_attn), feed_forward, sublayer.0/1/2.norm
    encoder.norm, decoder.norm: a final norm on each stack
    generator.proj: Linear, then log_softmax (logits here; log_softmax of them is its output)
Its LayerNorm is a_2 * (x - mean) / (std + eps) + b_2 with the unbiased std and eps=1e-6 added to the
std: this project's norm="std". The number of heads h is not stored: it is an argument.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

import torch

from i18n import M_

from . import state_dicts
from .common import Converted, Mapper, layer_count, make_config, sinusoid_tables
from .conventions import Conventions, Side
from .source import CheckpointInfo, LoadOptions, Source

NAME = "annotated"
TITLE = M_("The Annotated Transformer (harvardnlp)")
SIGNATURE = ("src_embed.0.lut.weight", "generator.proj.weight")
EMBEDDINGS = ("src_embed.0.lut.weight", "tgt_embed.0.lut.weight")
NOTES = M_("Source and target sentences are <s> ... </s>; padding is <blank> (id 2 without a vocabulary).")

_SPECIALS = {"bos": 0, "eos": 1, "pad": 2, "unk": 3}  # specials=["<s>", "</s>", "<blank>", "<unk>"]
CONVENTIONS = Conventions(source=Side(_SPECIALS, starts_with_bos=True), target=Side(_SPECIALS, starts_with_bos=False))


# -- the format protocol (see registry.py) ----------------------------------------------------------------


def detect(src: Source) -> bool:
    return state_dicts.detect(src, sys.modules[__name__])


def inspect(src: Source) -> CheckpointInfo:
    return state_dicts.inspect(src, sys.modules[__name__])


def load(src: Source, options: LoadOptions):
    return state_dicts.load(src, sys.modules[__name__], options)


def matches(state: Mapping[str, torch.Tensor]) -> bool:
    return any(k in state for k in SIGNATURE) or any(".linears.0.weight" in k for k in state)


def _attention(m: Mapper, ours: str, theirs: str) -> None:
    for i, proj in enumerate(("q_proj", "k_proj", "v_proj", "out_proj")):
        m.put_linear(f"{ours}.{proj}", f"{theirs}.linears.{i}")


def _norm(m: Mapper, ours: str, theirs: str) -> None:
    m.put(f"{ours}.weight", f"{theirs}.a_2")
    m.put(f"{ours}.bias", f"{theirs}.b_2")


def convert(state: Mapping[str, torch.Tensor], n_heads: int, where: str) -> Converted:
    m = Mapper(state, where)
    m.require(
        "src_embed.0.lut.weight",
        "tgt_embed.0.lut.weight",
        "src_embed.1.pe",
        "tgt_embed.1.pe",
        "encoder.layers.0.feed_forward.w_1.weight",
    )
    src_vocab, d_model = state["src_embed.0.lut.weight"].shape
    stored = {}
    for side, key in (("source", "src_embed.1.pe"), ("target", "tgt_embed.1.pe")):
        pe = m.take(key)
        stored[side] = (key, pe[0] if pe.dim() == 3 and pe.size(0) == 1 else pe)  # stored as (1, max_len, d_model)
    tables = sinusoid_tables(stored, d_model, "interleaved", where)
    n_enc, n_dec = layer_count(state, "encoder.layers"), layer_count(state, "decoder.layers")
    config = make_config(
        where,
        src_vocab_size=src_vocab,
        tgt_vocab_size=state["tgt_embed.0.lut.weight"].shape[0],
        d_model=d_model,
        n_heads=n_heads,
        d_ff=state["encoder.layers.0.feed_forward.w_1.weight"].shape[0],
        n_encoder_layers=n_enc,
        n_decoder_layers=max(n_dec, 1),
        dropout=0.0,
        norm_first=True,
        final_norm=True,
        positional="sinusoidal",
        pe_layout="interleaved",
        max_len=min(t.size(0) for t in tables.values()),
        norm="std",
        layer_norm_eps=1e-6,
        activation="relu",
        scale_embeddings=True,
        generator_bias="generator.proj.bias" in state,
        pad_id=_SPECIALS["pad"],
        bos_id=_SPECIALS["bos"],
        eos_id=_SPECIALS["eos"],
        extra={"imported_from": TITLE},
    )
    m.put("src_embed.weight", "src_embed.0.lut.weight")
    m.put("tgt_embed.weight", "tgt_embed.0.lut.weight")
    for i in range(n_enc):
        ours, theirs = f"encoder.layers.{i}", f"encoder.layers.{i}"
        _attention(m, f"{ours}.self_attn", f"{theirs}.self_attn")
        m.put_linear(f"{ours}.ff.linear1", f"{theirs}.feed_forward.w_1")
        m.put_linear(f"{ours}.ff.linear2", f"{theirs}.feed_forward.w_2")
        for j in range(2):
            _norm(m, f"{ours}.norm{j + 1}", f"{theirs}.sublayer.{j}.norm")
    for i in range(config.n_decoder_layers):
        ours, theirs = f"decoder.layers.{i}", f"decoder.layers.{i}"
        _attention(m, f"{ours}.self_attn", f"{theirs}.self_attn")
        _attention(m, f"{ours}.cross_attn", f"{theirs}.src_attn")
        m.put_linear(f"{ours}.ff.linear1", f"{theirs}.feed_forward.w_1")
        m.put_linear(f"{ours}.ff.linear2", f"{theirs}.feed_forward.w_2")
        for j in range(3):
            _norm(m, f"{ours}.norm{j + 1}", f"{theirs}.sublayer.{j}.norm")
    _norm(m, "encoder.norm", "encoder.norm")
    _norm(m, "decoder.norm", "decoder.norm")
    m.put_linear("generator", "generator.proj", bias=config.generator_bias)
    m.finish()
    return Converted(config, m.out, m.origin, tables)
