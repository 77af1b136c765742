"""The encoder and decoder layers of Hugging Face's BART family (BART, mBART, MarianMT): one mapping of their
parameter names onto this project's Transformer, shared by the formats that read them."""

from __future__ import annotations


def put_bart_layers(m, config) -> None:
    """Map every layer's attention projections, layer norms and feed-forward of `model.encoder.layers.i` /
    `model.decoder.layers.i` (self_attn, encoder_attn, fc1, fc2, *_layer_norm) with Mapper `m`: a decoder layer is an
    encoder layer with cross-attention (encoder_attn) and its norm between the two."""
    for stack, n, cross in (("encoder", config.n_encoder_layers, False), ("decoder", config.n_decoder_layers, True)):
        for i in range(n):
            ours, theirs = f"{stack}.layers.{i}", f"model.{stack}.layers.{i}"
            for mine, hf_name in (("self_attn", "self_attn"), *((("cross_attn", "encoder_attn"),) if cross else ())):
                for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
                    m.put_linear(f"{ours}.{mine}.{proj}", f"{theirs}.{hf_name}.{proj}")
            norms = ("self_attn_layer_norm", *(("encoder_attn_layer_norm",) if cross else ()), "final_layer_norm")
            for j, norm in enumerate(norms, 1):
                m.put_linear(f"{ours}.norm{j}", f"{theirs}.{norm}")
            m.put_linear(f"{ours}.ff.linear1", f"{theirs}.fc1")
            m.put_linear(f"{ours}.ff.linear2", f"{theirs}.fc2")
