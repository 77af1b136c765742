"""A local Hugging Face MarianMT folder (config.json, model.safetensors, vocab.json, source.spm, target.spm).

Read without importing transformers (only sentencepiece, for the tokenizer). The model, and how it maps:
    model.shared (embeddings shared by encoder, decoder and lm_head; * sqrt(d_model) if scale_embedding)
    sinusoidal positions in the half layout (sin block, then cos block), positions from 0
    model.encoder.layers.i: self_attn.{q,k,v,out}_proj, self_attn_layer_norm (-> norm1), fc1/fc2 (-> ff),
                            final_layer_norm (-> norm2): post-LN, LayerNorm(x + Sublayer(x)), eps 1e-5
    model.decoder.layers.i: self_attn, encoder_attn (-> cross_attn), self_attn_layer_norm / encoder_attn_layer_norm
                            / final_layer_norm (-> norm1..3); no final norm on either stack
    logits = lm_head(h) + final_logits_bias, lm_head tied to the (decoder) embeddings
Marian scales q by head_dim**-0.5 before q k^T; here the scores are divided by sqrt(head_dim): the same map.
Decoding starts from decoder_start_token_id (which is <pad> in Marian vocabularies).
Config fields this model cannot follow (a pre-LN flag, embedding LayerNorm, learned positions,
encoder and decoder of different widths, an unknown activation) are refused by name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from ..checkpoint import CheckpointError
from ..tokenizer import Tokenizer
from ..transformer import Transformer
from .common import Converted, Mapper, assemble, make_config, sinusoid_table
from .marian_tokenizer import marian_tokenizer
from .safe_pickle import load_torch_file

NAME = "marian"
TITLE = "Hugging Face MarianMT folder"

ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "swish": "silu", "silu": "silu"}
# config.json fields (from older Marian/BART configs) whose non-default value this model cannot follow.
UNSUPPORTED = {
    "normalize_before": (False, "pre-LN blocks"),
    "add_final_layer_norm": (False, "a final LayerNorm on each stack"),
    "normalize_embedding": (False, "a LayerNorm on the embeddings"),
    "layernorm_embedding": (False, "a LayerNorm on the embeddings"),
    "add_bias_logits": (False, "a bias inside the output projection"),
    "static_position_embeddings": (True, "learned position embeddings"),
    "is_encoder_decoder": (True, "a decoder-only model"),
}
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


def hf_model_type(folder: Path) -> str | None:
    """config.json's "model_type" (a Hugging Face folder), or None (this project's own config.json)."""
    try:
        data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data.get("model_type") if isinstance(data, dict) else None


def read_marian_config(folder: Path) -> dict[str, Any]:
    """config.json with MarianConfig's defaults filled in; refuses what this model cannot compute, naming the field."""
    try:
        raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(f"{folder.name}/config.json is not readable JSON ({err})") from None
    where = f"{folder.name}/config.json"
    if raw.get("model_type") != "marian":
        raise CheckpointError(f"{where} describes a Hugging Face {raw.get('model_type')!r} model; only MarianMT ('marian') folders can be imported")
    cfg = {
        "vocab_size": 58101, "max_position_embeddings": 1024, "encoder_layers": 12, "encoder_ffn_dim": 4096,
        "encoder_attention_heads": 16, "decoder_layers": 12, "decoder_ffn_dim": 4096, "decoder_attention_heads": 16,
        "activation_function": "gelu", "d_model": 1024, "decoder_start_token_id": 58100, "scale_embedding": False,
        "pad_token_id": 58100, "eos_token_id": 0, "share_encoder_decoder_embeddings": True, "tie_word_embeddings": True,
        **raw,
    }
    if cfg.get("decoder_vocab_size") is None:
        cfg["decoder_vocab_size"] = cfg["vocab_size"]
    if isinstance(cfg["eos_token_id"], list):
        if len(cfg["eos_token_id"]) != 1:
            raise CheckpointError(f"{where}: eos_token_id={cfg['eos_token_id']}; this model stops at a single end token")
        cfg["eos_token_id"] = cfg["eos_token_id"][0]
    problems = [
        f"{field}={raw[field]!r} ({meaning})"
        for field, (ok, meaning) in UNSUPPORTED.items()
        if field in raw and bool(raw[field]) != ok
    ]
    for a, b in (("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim")):
        if cfg[a] != cfg[b]:
            problems.append(f"{a}={cfg[a]} differs from {b}={cfg[b]} (this model uses one value for both stacks)")
    if cfg["activation_function"] not in ACTIVATIONS:
        problems.append(f"activation_function={cfg['activation_function']!r} (supported: {', '.join(ACTIVATIONS)})")
    if cfg["share_encoder_decoder_embeddings"] and cfg["decoder_vocab_size"] != cfg["vocab_size"]:
        problems.append(f"decoder_vocab_size={cfg['decoder_vocab_size']} differs from the shared vocab_size={cfg['vocab_size']}")
    if problems:
        raise CheckpointError(f"{where}: this model cannot be mapped exactly: " + "; ".join(problems))
    return cfg


def read_marian_weights(folder: Path) -> dict[str, torch.Tensor]:
    """model.safetensors (or its shards), else pytorch_model.bin read with weights_only."""
    if (folder / "model.safetensors").is_file():
        files = [folder / "model.safetensors"]
    elif (folder / "model.safetensors.index.json").is_file():
        index = json.loads((folder / "model.safetensors.index.json").read_text(encoding="utf-8"))
        files = [folder / name for name in dict.fromkeys(index.get("weight_map", {}).values())]
    elif (folder / "pytorch_model.bin").is_file():
        state = load_torch_file(folder / "pytorch_model.bin")
        if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
            raise CheckpointError(f"{folder.name}/pytorch_model.bin does not hold a state_dict of tensors")
        return state
    else:
        raise CheckpointError(f"{folder.name} has a Marian config.json but no weights ({' or '.join(WEIGHT_FILES)})")
    state: dict[str, torch.Tensor] = {}
    for path in files:
        try:
            state.update(load_file(str(path)))
        except (SafetensorError, OSError, ValueError, RuntimeError) as err:
            raise CheckpointError(f"{path.name} is not a readable safetensors file ({err})") from None
    return state


def _alias(m: Mapper, key: str, same_as: torch.Tensor, what: str) -> None:
    """An optional stored copy of a tied tensor: used only to check it really is the same."""
    if key in m.state:
        m.take(key)
        if m.state[key].shape != same_as.shape or not torch.equal(m.state[key], same_as):
            raise CheckpointError(f"{m.where}: {key} differs from {what}, although config.json ties them")


def convert_marian(state: Mapping[str, torch.Tensor], cfg: dict[str, Any], n_heads: int | None, where: str) -> Converted:
    if n_heads is not None and n_heads != cfg["encoder_attention_heads"]:
        raise CheckpointError(f"{where}: config.json says {cfg['encoder_attention_heads']} heads, but n_heads={n_heads} was asked for")
    m = Mapper(state, where)
    shared, tied = bool(cfg["share_encoder_decoder_embeddings"]), bool(cfg["tie_word_embeddings"])
    d = cfg["d_model"]
    if shared:
        m.require("model.shared.weight")
        m.put("src_embed.weight", "model.shared.weight")
        tgt = state["model.shared.weight"]
        _alias(m, "model.encoder.embed_tokens.weight", tgt, "model.shared.weight")
        _alias(m, "model.decoder.embed_tokens.weight", tgt, "model.shared.weight")
    else:
        m.require("model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight")
        m.put("src_embed.weight", "model.encoder.embed_tokens.weight")
        m.put("tgt_embed.weight", "model.decoder.embed_tokens.weight")
        tgt = state["model.decoder.embed_tokens.weight"]
    if tied:
        _alias(m, "lm_head.weight", tgt, "the decoder embeddings")
    else:
        m.put("generator.weight", "lm_head.weight")
    if "final_logits_bias" in state:
        m.put("generator.bias", "final_logits_bias", lambda t: t.reshape(-1), " (1, V) -> (V,)")
    else:  # MarianMTModel starts it at zero when a file lacks it
        m.out["generator.bias"] = torch.zeros(cfg["decoder_vocab_size"])
    tables = {}
    for side, stack in (("source", "encoder"), ("target", "decoder")):
        key = f"model.{stack}.embed_positions.weight"
        if key in state:
            tables[side] = sinusoid_table(m.take(key), key, d, "half", where)
    config = make_config(
        where,
        src_vocab_size=cfg["vocab_size"], tgt_vocab_size=cfg["decoder_vocab_size"], d_model=d,
        n_heads=cfg["encoder_attention_heads"], d_ff=cfg["encoder_ffn_dim"], n_encoder_layers=cfg["encoder_layers"],
        n_decoder_layers=cfg["decoder_layers"], dropout=0.0, norm_first=False, final_norm=False,
        positional="sinusoidal", pe_layout="half", max_len=cfg["max_position_embeddings"],
        share_embeddings=shared, tie_generator=tied, generator_bias=True, scale_embeddings=bool(cfg["scale_embedding"]),
        activation=ACTIVATIONS[cfg["activation_function"]], norm="layernorm", layer_norm_eps=1e-5,
        pad_id=cfg["pad_token_id"], bos_id=cfg["decoder_start_token_id"], eos_id=cfg["eos_token_id"],
        extra={"imported_from": TITLE},
    )
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
    m.finish()
    for side, table in tables.items():
        if table.size(0) < config.max_len:
            raise CheckpointError(f"{where}: the stored {side} positions cover {table.size(0)} rows, config.json says {config.max_len}")
    return Converted(config, m.out, m.origin, tables)


def load_marian(folder: Path, n_heads: int | None = None) -> tuple[Transformer, Tokenizer]:
    """(model in eval mode, the folder's tokenizer) for a MarianMT folder."""
    cfg = read_marian_config(folder)
    where = f"{folder.name} ({TITLE})"
    converted = convert_marian(read_marian_weights(folder), cfg, n_heads, where)
    tokenizer = marian_tokenizer(folder, cfg, converted.config.src_vocab_size, converted.config.tgt_vocab_size)
    return assemble(converted, where), tokenizer
