"""A local Hugging Face Llama or Qwen2 folder (LlamaForCausalLM / Qwen2ForCausalLM: config.json, model.safetensors
or its shards or pytorch_model.bin, tokenizer.json or Llama's tokenizer.model). Read without transformers.

How it maps onto the one Transformer (configuration, not a fork):
    shape "decoder-only": the text is the decoder's one sequence, no encoder, no cross-attention
    model.embed_tokens -> the one embedding table, not scaled; no positions added to it: RoPE inside every
        self-attention (positional="rope"), the "rotate_half" pairing (pe_layout="half"), base rope_theta, on the
        first partial_rotary_factor * head_dim dims when the config says so (rope_dim)
    grouped-query attention: num_key_value_heads key/value heads, query head h reads key/value head
        h // (num_attention_heads / num_key_value_heads) (n_kv_heads)
    pre-LN blocks with RMS norms (input_layernorm, post_attention_layernorm), model.norm the final norm
    SwiGLU: down_proj(silu(gate_proj x) * up_proj x) -> the gated feed-forward (linear1 gate, linear3 up, linear2 down)
    biases: none (Llama; attention_bias puts them on q, k, v and o), q/k/v only (Qwen2)
    lm_head: its own unless tie_word_embeddings (Qwen2-0.5B ties it)
RoPE scalings (linear, dynamic, YaRN, Llama 3's) and sliding windows change the model beyond what these fields
say: such configs are refused by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from i18n import M_, N_

from ...network.config import LIMITS, TransformerConfig
from ...network.transformer import Transformer
from ...text.tokenizer import Tokenizer
from ..checkpoint import CheckpointError
from . import hf_common as hf
from . import hf_one_stack as one
from .common import Converted, Mapper, make_config
from .source import CheckpointInfo, LoadOptions, Source

NAME = "llama"
TITLE = M_("Hugging Face Llama / Qwen2 folder")
MODEL_TYPES = {"llama": N_("Llama"), "qwen2": N_("Qwen2")}

DEFAULTS: dict[str, Any] = {
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": None,
    "head_dim": None,
    "hidden_act": "silu",
    "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "mlp_bias": False,
    "use_sliding_window": False,
}


def detect(src: Source) -> bool:
    return hf.model_type(src) in MODEL_TYPES


def read_llama_config(src: Source) -> dict[str, Any]:
    family = hf.model_type(src)
    if family not in MODEL_TYPES:
        raise CheckpointError(M_("{name}/config.json does not describe a Llama or Qwen2 model", name=src.name))
    cfg = one.read_config(src, DEFAULTS, M_(MODEL_TYPES[family]))
    cfg["_family"] = family
    where = f"{src.name}/config.json"
    one.ints(cfg, where, "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
             "num_attention_heads", "max_position_embeddings")  # fmt: skip
    if cfg["num_key_value_heads"] is None:
        cfg["num_key_value_heads"] = cfg["num_attention_heads"]
    one.ints(cfg, where, "num_key_value_heads")
    if cfg["head_dim"] is not None:
        one.ints(cfg, where, "head_dim")
    problems: list = []
    cfg["_activation"] = hf.activation(cfg, "hidden_act", problems)
    cfg["_theta"], factor = hf.rope(cfg, problems)  # any RoPE scaling refused by name
    if cfg["use_sliding_window"] is not False:
        problems.append(M_("{field} is not supported", field="use_sliding_window"))
    if family == "llama" and cfg["attention_bias"] is True and cfg["mlp_bias"] is not True:
        problems.append(M_("{field} is not supported", field="attention_bias without mlp_bias"))
    for field in ("attention_bias", "mlp_bias", "tie_word_embeddings"):
        if not isinstance(cfg[field], bool):
            problems.append(M_("{field} must be true or false", field=field))
    hf.refuse(where, problems)
    heads = cfg["num_attention_heads"]
    head_dim = cfg["head_dim"] or (cfg["hidden_size"] // heads if heads > 0 else 0)
    cfg["_head_dim"] = head_dim
    rotated = int(head_dim * factor)
    cfg["_rope_dim"] = None if rotated == head_dim else rotated
    return cfg


def llama_config(cfg: dict[str, Any], where) -> TransformerConfig:
    ids = one.special_ids(cfg, cfg["vocab_size"])
    qwen = cfg["_family"] == "qwen2"
    return make_config(
        where,
        shape="decoder-only",
        src_vocab_size=cfg["vocab_size"],
        tgt_vocab_size=cfg["vocab_size"],
        d_model=cfg["hidden_size"],
        n_heads=cfg["num_attention_heads"],
        n_kv_heads=cfg["num_key_value_heads"],
        head_dim=cfg["_head_dim"],
        d_ff=cfg["intermediate_size"],
        n_encoder_layers=0,
        n_decoder_layers=cfg["num_hidden_layers"],
        dropout=0.0,
        norm_first=True,
        final_norm=True,
        positional="rope",
        pe_base=cfg["_theta"],
        pe_layout="half",
        rope_dim=cfg["_rope_dim"],
        # RoPE has no table: a longer context than this app's limit reads at most LIMITS["max_len"] tokens
        max_len=min(cfg["max_position_embeddings"], LIMITS["max_len"]),
        share_embeddings=True,
        tie_generator=cfg["tie_word_embeddings"],
        generator_bias=False,
        scale_embeddings=False,
        activation=cfg["_activation"],
        ff_gated=True,
        bias=False if qwen else cfg["attention_bias"],
        qkv_bias=True if qwen else None,
        norm="rms",
        layer_norm_eps=cfg["rms_norm_eps"],
        pad_id=ids["pad"],
        bos_id=ids["bos"],
        eos_id=ids["eos"],
        extra={"imported_from": "Hugging Face " + ("Qwen2" if qwen else "Llama")},
    )


def inspect(src: Source) -> CheckpointInfo:
    return one.info(src, NAME, TITLE, llama_config(read_llama_config(src), f"{src.name}/config.json"))


def load(src: Source, options: LoadOptions) -> tuple[Transformer, Tokenizer]:
    return one.load(src, options, TITLE, read_llama_config, llama_config, convert_llama, "llama")


def convert_llama(state: Mapping[str, torch.Tensor], config: TransformerConfig, where) -> Converted:
    m = Mapper(state, where)
    m.require("model.embed_tokens.weight")
    m.put("src_embed.weight", "model.embed_tokens.weight")
    if config.tie_generator:
        hf.alias(m, "lm_head.weight", state["model.embed_tokens.weight"], "model.embed_tokens.weight")
    else:
        m.put("generator.weight", "lm_head.weight")
    m.put("decoder.norm.weight", "model.norm.weight")
    qkv_bias = config.bias if config.qkv_bias is None else config.qkv_bias
    for i in range(config.n_decoder_layers):
        ours, theirs = f"decoder.layers.{i}", f"model.layers.{i}"
        for proj in ("q_proj", "k_proj", "v_proj"):
            m.put_linear(f"{ours}.self_attn.{proj}", f"{theirs}.self_attn.{proj}", bias=qkv_bias)
        m.put_linear(f"{ours}.self_attn.out_proj", f"{theirs}.self_attn.o_proj", bias=config.bias)
        m.put(f"{ours}.norm1.weight", f"{theirs}.input_layernorm.weight")
        m.put(f"{ours}.norm3.weight", f"{theirs}.post_attention_layernorm.weight")
        m.put_linear(f"{ours}.ff.linear1", f"{theirs}.mlp.gate_proj", bias=config.bias)
        m.put_linear(f"{ours}.ff.linear3", f"{theirs}.mlp.up_proj", bias=config.bias)
        m.put_linear(f"{ours}.ff.linear2", f"{theirs}.mlp.down_proj", bias=config.bias)
    m.finish()
    return Converted(config, m.out, m.origin)
