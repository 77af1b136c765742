"""The PyTorch tutorial "Language Translation with nn.Transformer and torchtext": `Seq2SeqTransformer`.

Its model, and how it maps here:
    src_tok_emb.embedding (* sqrt(emb_size)), tgt_tok_emb.embedding
    positional_encoding.pos_embedding: one (max_len, 1, emb_size) sinusoid buffer for both sides
    transformer = nn.Transformer(d_model, nhead, ...) with its defaults: post-LN (norm_first=False),
        ReLU, LayerNorm eps 1e-5, and a final LayerNorm on each stack (transformer.encoder.norm, .decoder.norm)
    transformer.encoder.layers.i.self_attn.in_proj_weight (3d, d) = [W_q; W_k; W_v], split here; out_proj
    transformer.decoder.layers.i.multihead_attn -> cross_attn; linear1/linear2; norm1..norm3
    generator: Linear (logits)
Sequence-first tensors (S, B, D) there, batch-first here: the weights do not depend on it. The number
of heads is not stored (the tutorial uses 8): it is an argument. A state_dict cannot show whether the
model was built with norm_first=True or another activation; the tutorial's defaults are assumed.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

import torch

from i18n import M_

from . import state_dicts
from .common import Converted, Mapper, chunk, layer_count, make_config, sinusoid_table
from .conventions import Conventions, Side
from .source import CheckpointInfo, LoadOptions, Source

NAME = "torch-tutorial"
TITLE = M_("PyTorch translation tutorial (Seq2SeqTransformer around nn.Transformer)")
SIGNATURE = ("src_tok_emb.embedding.weight", "positional_encoding.pos_embedding")
EMBEDDINGS = ("src_tok_emb.embedding.weight", "tgt_tok_emb.embedding.weight")
NOTES = M_(
    "Source and target sentences are <bos> ... <eos>; post-LN with ReLU (the tutorial's nn.Transformer defaults) is assumed."
)

_SPECIALS = {"unk": 0, "pad": 1, "bos": 2, "eos": 3}  # special_symbols = ['<unk>', '<pad>', '<bos>', '<eos>']
CONVENTIONS = Conventions(source=Side(_SPECIALS, starts_with_bos=True), target=Side(_SPECIALS))


# -- the format protocol (see registry.py) ----------------------------------------------------------------


def detect(src: Source) -> bool:
    return state_dicts.detect(src, sys.modules[__name__])


def inspect(src: Source) -> CheckpointInfo:
    return state_dicts.inspect(src, sys.modules[__name__])


def load(src: Source, options: LoadOptions):
    return state_dicts.load(src, sys.modules[__name__], options)


def matches(state: Mapping[str, torch.Tensor]) -> bool:
    return any(k in state for k in SIGNATURE) or any(k.startswith("transformer.encoder.layers.") for k in state)


def _attention(m: Mapper, ours: str, theirs: str) -> None:
    for i, proj in enumerate(("q_proj", "k_proj", "v_proj")):
        part = f" (rows {('W_q', 'W_k', 'W_v')[i]} of 3)"
        m.put(f"{ours}.{proj}.weight", f"{theirs}.in_proj_weight", chunk(i), part)
        m.put(f"{ours}.{proj}.bias", f"{theirs}.in_proj_bias", chunk(i), part)
    m.put_linear(f"{ours}.out_proj", f"{theirs}.out_proj")


def convert(state: Mapping[str, torch.Tensor], n_heads: int, where: str) -> Converted:
    m = Mapper(state, where)
    m.require(
        "src_tok_emb.embedding.weight",
        "tgt_tok_emb.embedding.weight",
        "positional_encoding.pos_embedding",
        "transformer.encoder.layers.0.linear1.weight",
    )
    src_vocab, d_model = state["src_tok_emb.embedding.weight"].shape
    pe = m.take("positional_encoding.pos_embedding")
    rows = pe[:, 0] if pe.dim() == 3 and pe.size(1) == 1 else pe  # stored as (max_len, 1, d_model)
    table = sinusoid_table(rows, "positional_encoding.pos_embedding", d_model, "interleaved", where)
    n_enc, n_dec = layer_count(state, "transformer.encoder.layers"), layer_count(state, "transformer.decoder.layers")
    config = make_config(
        where,
        src_vocab_size=src_vocab,
        tgt_vocab_size=state["tgt_tok_emb.embedding.weight"].shape[0],
        d_model=d_model,
        n_heads=n_heads,
        d_ff=state["transformer.encoder.layers.0.linear1.weight"].shape[0],
        n_encoder_layers=n_enc,
        n_decoder_layers=max(n_dec, 1),
        dropout=0.0,
        norm_first=False,
        final_norm=True,
        positional="sinusoidal",
        pe_layout="interleaved",
        max_len=table.size(0),
        norm="layernorm",
        layer_norm_eps=1e-5,
        activation="relu",
        scale_embeddings=True,
        generator_bias=True,
        pad_id=_SPECIALS["pad"],
        bos_id=_SPECIALS["bos"],
        eos_id=_SPECIALS["eos"],
        extra={"imported_from": TITLE},
    )
    m.put("src_embed.weight", "src_tok_emb.embedding.weight")
    m.put("tgt_embed.weight", "tgt_tok_emb.embedding.weight")
    for i in range(n_enc):
        ours, theirs = f"encoder.layers.{i}", f"transformer.encoder.layers.{i}"
        _attention(m, f"{ours}.self_attn", f"{theirs}.self_attn")
        m.put_linear(f"{ours}.ff.linear1", f"{theirs}.linear1")
        m.put_linear(f"{ours}.ff.linear2", f"{theirs}.linear2")
        for j in (1, 2):
            m.put_linear(f"{ours}.norm{j}", f"{theirs}.norm{j}")
    for i in range(config.n_decoder_layers):
        ours, theirs = f"decoder.layers.{i}", f"transformer.decoder.layers.{i}"
        _attention(m, f"{ours}.self_attn", f"{theirs}.self_attn")
        _attention(m, f"{ours}.cross_attn", f"{theirs}.multihead_attn")
        m.put_linear(f"{ours}.ff.linear1", f"{theirs}.linear1")
        m.put_linear(f"{ours}.ff.linear2", f"{theirs}.linear2")
        for j in (1, 2, 3):
            m.put_linear(f"{ours}.norm{j}", f"{theirs}.norm{j}")
    m.put_linear("encoder.norm", "transformer.encoder.norm")
    m.put_linear("decoder.norm", "transformer.decoder.norm")
    m.put_linear("generator", "generator")
    m.finish()
    return Converted(config, m.out, m.origin, {"source": table, "target": table})
