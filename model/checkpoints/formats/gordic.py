"""gordicaleksa/pytorch-original-transformer: a training-state dict {"state_dict": ..., plus metadata}.

Its model, and how it maps here:
    src_embedding.embeddings_table (* sqrt(d_model)), src_pos_embedding.positional_encodings_table (max_len, d)
    encoder.encoder_layers.i: multi_headed_attention.qkv_nets.0..2 (W_q, W_k, W_v), out_projection_net (W_o),
                              pointwise_net.linear1/linear2 (ReLU), sublayers.0/1.norm (nn.LayerNorm): pre-LN
    decoder.decoder_layers.i: trg_multi_headed_attention (-> self_attn), src_multi_headed_attention (-> cross_attn),
                              pointwise_net, sublayers.0/1/2.norm
    encoder.norm, decoder.norm: final nn.LayerNorm on each stack
    decoder_generator.linear: Linear, then log_softmax
The number of heads is not stored (its training script uses 8): it is an argument.
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

NAME = "gordic"
TITLE = M_("pytorch-original-transformer (gordicaleksa)")
SIGNATURE = ("src_embedding.embeddings_table.weight", "decoder_generator.linear.weight")
EMBEDDINGS = ("src_embedding.embeddings_table.weight", "trg_embedding.embeddings_table.weight")
NOTES = M_(
    "Sources carry no <s> or </s> in this format: the end marker the app appends is <pad>, which attention "
    "masks out (a zero column). Targets are <s> ... </s>."
)

CONVENTIONS = Conventions(
    source=Side({"unk": 0, "pad": 1}, ends_with_eos=False),  # source Field: no init or eos token
    target=Side({"unk": 0, "pad": 1, "bos": 2, "eos": 3}),
)


# -- the format protocol (see registry.py) ----------------------------------------------------------------


def detect(src: Source) -> bool:
    return state_dicts.detect(src, sys.modules[__name__])


def inspect(src: Source) -> CheckpointInfo:
    return state_dicts.inspect(src, sys.modules[__name__])


def load(src: Source, options: LoadOptions):
    return state_dicts.load(src, sys.modules[__name__], options)


def matches(state: Mapping[str, torch.Tensor]) -> bool:
    return any(k in state for k in SIGNATURE) or any(k.startswith("encoder.encoder_layers.") for k in state)


def _attention(m: Mapper, ours: str, theirs: str) -> None:
    for i, proj in enumerate(("q_proj", "k_proj", "v_proj")):
        m.put_linear(f"{ours}.{proj}", f"{theirs}.qkv_nets.{i}")
    m.put_linear(f"{ours}.out_proj", f"{theirs}.out_projection_net")


def _layer_common(m: Mapper, ours: str, theirs: str, norms: int) -> None:
    m.put_linear(f"{ours}.ff.linear1", f"{theirs}.pointwise_net.linear1")
    m.put_linear(f"{ours}.ff.linear2", f"{theirs}.pointwise_net.linear2")
    for j in range(norms):
        m.put_linear(f"{ours}.norm{j + 1}", f"{theirs}.sublayers.{j}.norm")


def convert(state: Mapping[str, torch.Tensor], n_heads: int, where: str) -> Converted:
    m = Mapper(state, where)
    m.require(
        "src_embedding.embeddings_table.weight",
        "trg_embedding.embeddings_table.weight",
        "src_pos_embedding.positional_encodings_table",
        "trg_pos_embedding.positional_encodings_table",
        "encoder.encoder_layers.0.pointwise_net.linear1.weight",
    )
    src_vocab, d_model = state["src_embedding.embeddings_table.weight"].shape
    keys = (
        ("source", "src_pos_embedding.positional_encodings_table"),
        ("target", "trg_pos_embedding.positional_encodings_table"),
    )
    tables = sinusoid_tables({side: (key, m.take(key)) for side, key in keys}, d_model, "interleaved", where)
    n_enc, n_dec = layer_count(state, "encoder.encoder_layers"), layer_count(state, "decoder.decoder_layers")
    config = make_config(
        where,
        src_vocab_size=src_vocab,
        tgt_vocab_size=state["trg_embedding.embeddings_table.weight"].shape[0],
        d_model=d_model,
        n_heads=n_heads,
        d_ff=state["encoder.encoder_layers.0.pointwise_net.linear1.weight"].shape[0],
        n_encoder_layers=n_enc,
        n_decoder_layers=max(n_dec, 1),
        dropout=0.0,
        norm_first=True,
        final_norm=True,
        positional="sinusoidal",
        pe_layout="interleaved",
        max_len=min(t.size(0) for t in tables.values()),
        norm="layernorm",
        layer_norm_eps=1e-5,
        activation="relu",
        scale_embeddings=True,
        generator_bias=True,
        pad_id=1,
        bos_id=2,
        eos_id=3,
        extra={"imported_from": TITLE},
    )
    m.put("src_embed.weight", "src_embedding.embeddings_table.weight")
    m.put("tgt_embed.weight", "trg_embedding.embeddings_table.weight")
    for i in range(n_enc):
        ours, theirs = f"encoder.layers.{i}", f"encoder.encoder_layers.{i}"
        _attention(m, f"{ours}.self_attn", f"{theirs}.multi_headed_attention")
        _layer_common(m, ours, theirs, norms=2)
    for i in range(config.n_decoder_layers):
        ours, theirs = f"decoder.layers.{i}", f"decoder.decoder_layers.{i}"
        _attention(m, f"{ours}.self_attn", f"{theirs}.trg_multi_headed_attention")
        _attention(m, f"{ours}.cross_attn", f"{theirs}.src_multi_headed_attention")
        _layer_common(m, ours, theirs, norms=3)
    m.put_linear("encoder.norm", "encoder.norm")
    m.put_linear("decoder.norm", "decoder.norm")
    m.put_linear("generator", "decoder_generator.linear")
    m.finish()
    return Converted(config, m.out, m.origin, tables)
