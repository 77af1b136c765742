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

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from i18n import M_, N_, join_messages

from ...network.config import TransformerConfig
from ...network.transformer import Transformer
from ...text.tokenizer import Tokenizer
from ..checkpoint import CheckpointError
from . import hf_seq2seq as s2s
from .common import Converted, Mapper, check_heads, one_end_token, refuse, sinusoid_table
from .common import where as place
from .hf_layers import put_bart_layers
from .marian_tokenizer import TOKENIZER_FILES, marian_tokenizer
from .source import CheckpointInfo, LoadOptions, Source, Weights, precision_note

NAME = "marian"
TITLE = M_("Hugging Face MarianMT folder")
MODEL_TYPES = {"marian": N_("MarianMT")}  # Hugging Face model_type -> family name (the registry's refusal lists them)

ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "swish": "silu", "silu": "silu"}
# config.json fields (from older Marian/BART configs) whose non-default value this model cannot follow.
UNSUPPORTED = {
    "normalize_before": (False, N_("pre-LN blocks")),
    "add_final_layer_norm": (False, N_("a final LayerNorm on each stack")),
    "normalize_embedding": (False, N_("a LayerNorm on the embeddings")),
    "layernorm_embedding": (False, N_("a LayerNorm on the embeddings")),
    "add_bias_logits": (False, N_("a bias inside the output projection")),
    "static_position_embeddings": (True, N_("learned position embeddings")),
    "is_encoder_decoder": (True, N_("a decoder-only model")),
}
NOT_SET, IS_SET = N_("{field} is not set ({meaning})"), N_("{field} is set ({meaning})")
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


MAX_SHARDS = 64


def detect(src: Source) -> bool:
    data = src.json("config.json") if src.is_dir else None
    return isinstance(data, dict) and data.get("model_type") == "marian"


def read_marian_config(src: Source) -> dict[str, Any]:
    """config.json with MarianConfig's defaults filled in; refuses what this model cannot compute, naming the
    field (never echoing a value: they are file contents)."""
    raw = src.json("config.json")
    where = f"{src.name}/config.json"
    if not isinstance(raw, dict) or raw.get("model_type") != "marian":
        raise CheckpointError(
            M_(
                "{where} does not describe a MarianMT model; only MarianMT Hugging Face folders can be imported",
                where=where,
            )
        )
    cfg = {
        **s2s.BART_DEFAULTS,
        "vocab_size": 58101,
        "decoder_start_token_id": 58100,
        "pad_token_id": 58100,
        "eos_token_id": 0,
        "share_encoder_decoder_embeddings": True,
        **raw,
    }
    if cfg.get("decoder_vocab_size") is None:
        cfg["decoder_vocab_size"] = cfg["vocab_size"]
    one_end_token(cfg, where)
    problems = [
        M_(NOT_SET if ok else IS_SET, field=field, meaning=M_(meaning))
        for field, (ok, meaning) in UNSUPPORTED.items()
        if field in raw and bool(raw[field]) != ok
    ]
    for a, b in (("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim")):
        if cfg[a] != cfg[b]:
            problems.append(M_("{a} differs from {b} (this model uses one value for both stacks)", a=a, b=b))
    if not isinstance(cfg["activation_function"], str) or cfg["activation_function"] not in ACTIVATIONS:
        problems.append(M_("activation_function is not one of {allowed}", allowed=", ".join(ACTIVATIONS)))
    if cfg["share_encoder_decoder_embeddings"] and cfg["decoder_vocab_size"] != cfg["vocab_size"]:
        problems.append(M_("decoder_vocab_size differs from the shared vocab_size"))
    refuse(where, problems)
    return cfg


def marian_config(cfg: dict[str, Any], where: str) -> TransformerConfig:
    """This project's config for the Marian one: limits checked here, before any weights are read."""
    shared, tied = cfg["share_encoder_decoder_embeddings"], cfg["tie_word_embeddings"]
    if not (isinstance(shared, bool) and isinstance(tied, bool) and isinstance(cfg["scale_embedding"], bool)):
        raise CheckpointError(
            M_(
                "{where}: share_encoder_decoder_embeddings, tie_word_embeddings and scale_embedding must be true or false",
                where=where,
            )
        )
    return s2s.seq2seq_config(
        where,
        cfg,
        s2s.BART_NAMES,
        tgt_vocab_size=cfg["decoder_vocab_size"],
        norm_first=False,
        final_norm=False,
        positional="sinusoidal",
        pe_layout="half",
        share_embeddings=shared,
        tie_generator=tied,
        generator_bias=True,
        scale_embeddings=cfg["scale_embedding"],
        activation=ACTIVATIONS[cfg["activation_function"]],
        norm="layernorm",
        layer_norm_eps=1e-5,
        extra={"imported_from": TITLE},
    )


def read_marian_weights(src: Source, widen: bool = False, title: str = TITLE) -> Weights:
    """model.safetensors (or its shards), else pytorch_model.bin read with weights_only; precision noted. widen=True:
    half-precision safetensors read as float32 (Source.weights); Marian itself does not, its stored sinusoid tables
    are checked against the precision they were stored in. title: the format named when there are no weights (every
    Hugging Face family reads its weights here)."""
    if src.has("model.safetensors"):
        return src.weights("model.safetensors", widen)
    if src.has("model.safetensors.index.json"):
        index = src.json("model.safetensors.index.json")
        weight_map = index.get("weight_map") if isinstance(index, dict) else None
        names = list(dict.fromkeys(weight_map.values())) if isinstance(weight_map, dict) else []
        if not names or len(names) > MAX_SHARDS or not all(isinstance(n, str) and n == Path(n).name for n in names):
            raise CheckpointError(
                M_(
                    "{name}/model.safetensors.index.json does not list 1..{max} shard files of this folder",
                    name=src.name,
                    max=MAX_SHARDS,
                )
            )
        parts = [src.weights(name, widen) for name in names]
        state = {k: v for part in parts for k, v in part.state.items()}
        precision = "+".join(sorted({p for part in parts for p in part.precision.split("+")}))
        return Weights(state, {}, precision, any(part.mapped for part in parts))  # read privately: adopted
    if src.has("pytorch_model.bin"):
        return src.weights("pytorch_model.bin")
    raise CheckpointError(
        M_(
            "{name} ({title}) has a config.json but no weights ({files})",
            name=src.name,
            title=title,
            files=" or ".join(WEIGHT_FILES),
        )
    )


def inspect(src: Source) -> CheckpointInfo:
    cfg = read_marian_config(src)
    config = marian_config(cfg, f"{src.name}/config.json")
    precision = read_marian_weights(src).precision  # memory-mapped: the tensors' dtypes, not their bytes
    notes = s2s.tokenizer_note(src.has(TOKENIZER_FILES[0]), M_("Tokenized with the folder's own sentencepiece models."))
    notes = join_messages(" ", filter(None, (notes, precision_note(precision))))
    return CheckpointInfo.of_folder(src, NAME, TITLE, config, notes=notes, precision=precision)


def load(src: Source, options: LoadOptions) -> tuple[Transformer, Tokenizer]:
    """(model in eval mode, the folder's tokenizer) for a MarianMT folder."""
    where = place(src.name, TITLE)
    s2s.refuse_vocab_files(options, where)
    cfg = read_marian_config(src)
    config = marian_config(cfg, where)
    check_heads(where, config, options.n_heads)
    weights = read_marian_weights(src)
    model = s2s.assembled(convert_marian(weights.state, config, where), weights, where)
    return model, marian_tokenizer(src.path, cfg, config.src_vocab_size, config.tgt_vocab_size)


def _alias(m: Mapper, key: str, same_as: torch.Tensor, what: str) -> None:
    """An optional stored copy of a tied tensor: used only to check it really is the same."""
    if key in m.state:
        m.take(key)
        if m.state[key].shape != same_as.shape or not torch.equal(m.state[key], same_as):
            raise CheckpointError(
                M_(
                    "{where}: {key} differs from {what}, although config.json ties them",
                    where=m.where,
                    key=key,
                    what=what,
                )
            )


def convert_marian(state: Mapping[str, torch.Tensor], config: TransformerConfig, where: str) -> Converted:
    m = Mapper(state, where)
    s2s.put_embeddings(m, config, "model.", _alias, head_is="the decoder embeddings")
    d, tables = config.d_model, {}
    for side, stack in (("source", "encoder"), ("target", "decoder")):
        key = f"model.{stack}.embed_positions.weight"
        if key in state:
            tables[side] = sinusoid_table(m.take(key), key, d, "half", where)
    put_bart_layers(m, config)  # the layer names Marian and BART share
    m.finish()
    for side, table in tables.items():
        if table.size(0) < config.max_len:
            raise CheckpointError(
                f"{where}: the stored {side} positions cover {table.size(0)} rows, config.json says {config.max_len}"
            )
    return Converted(config, m.out, m.origin, tables)
