"""The encoder and decoder layers of Hugging Face's BART family (BART, mBART, MarianMT): one mapping of their
parameter names onto this project's Transformer, shared by the formats that read them."""

from __future__ import annotations


def put_bart_layers(m, config) -> None:
    """Map every layer's attention projections, layer norms and feed-forward of `model.encoder.layers.i` /
    `model.decoder.layers.i` (self_attn, encoder_attn, fc1, fc2, *_layer_norm) with Mapper `m`."""
    for i in range(config.n_encoder_layers):
        ours, theirs = f"encoder.layers.{i}", f"model.encoder.layers.{i}"
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            m.put_linear(f"{ours}.self_attn.{proj}", f"{theirs}.self_attn.{proj}")
        m.put_linear(f"{ours}.norm1", f"{theirs}.self_attn_layer_norm")
        m.put_linear(f"{ours}.ff.linear1", f"{theirs}.fc1")
        m.put_linear(f"{ours}.ff.linear2", f"{theirs}.fc2")
        m.put_linear(f"{ours}.norm2", f"{theirs}.final_layer_norm")
    for i in range(config.n_decoder_layers):
        ours, theirs = f"decoder.layers.{i}", f"model.decoder.layers.{i}"
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            m.put_linear(f"{ours}.self_attn.{proj}", f"{theirs}.self_attn.{proj}")
            m.put_linear(f"{ours}.cross_attn.{proj}", f"{theirs}.encoder_attn.{proj}")
        m.put_linear(f"{ours}.norm1", f"{theirs}.self_attn_layer_norm")
        m.put_linear(f"{ours}.norm2", f"{theirs}.encoder_attn_layer_norm")
        m.put_linear(f"{ours}.ff.linear1", f"{theirs}.fc1")
        m.put_linear(f"{ours}.ff.linear2", f"{theirs}.fc2")
        m.put_linear(f"{ours}.norm3", f"{theirs}.final_layer_norm")
