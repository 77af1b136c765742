"""A local Hugging Face T5 or flan-T5 folder (config.json, model.safetensors or pytorch_model.bin, spiece.model).
Read without transformers.

How it maps onto the one Transformer (configuration, not a fork):
    shared -> the embeddings of both sides, not scaled by sqrt(d_model)
    no positional encoding added to the embeddings: T5's only positions are a learned bias on the scores,
        per head and bucketed distance, stored in the first layer of each stack and used by all its self-attention
        layers (none in cross-attention) -> positional="relative", the table in src_pe / tgt_pe
    pre-LN blocks with RMS norms (weight only, no mean, no bias; eps layer_norm_epsilon), a final norm per stack
    attention q,k,v,o without biases; q.k is NOT divided by sqrt(d_kv); the head width is d_kv (flan-T5-small:
        6 heads of 64 in a d_model of 512)
    feed-forward wi -> act -> wo ("relu", T5 v1.0), or gated: act(wi_0 x) * wi_1 x -> wo ("gated-gelu",
        T5 v1.1 / flan-T5, GELU with the tanh approximation); no biases
    logits = lm_head(h * d_model^-0.5) with lm_head tied to the embeddings (v1.0); v1.1 / flan-T5 store their
        own lm_head and do not rescale (config tie_word_embeddings false, or scale_decoder_outputs)
Decoding starts from decoder_start_token_id (<pad>, 0) and stops at </s> (1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from i18n import M_, N_

from ...network.config import LIMITS, TransformerConfig
from ...network.transformer import Transformer
from ...text.tokenizer import IdVocab, Tokenizer
from ..checkpoint import CheckpointError
from . import hf_common as hf
from . import hf_seq2seq as s2s
from .common import Converted, Mapper
from .common import where as place
from .hf_tokenizers import has_files, t5_vocab
from .source import CheckpointInfo, LoadOptions, Source

NAME = "t5"
TITLE = M_("Hugging Face T5 / flan-T5 folder")
MODEL_TYPES = {"t5": N_("T5 and flan-T5")}
TOKENIZER_FILES = ("spiece.model",)
MAX_LEN = 512  # T5 has no position table; the length it was trained on (n_positions in old configs)

DEFAULTS: dict[str, Any] = {
    "vocab_size": 32128,
    "d_model": 512,
    "d_kv": 64,
    "d_ff": 2048,
    "num_layers": 6,
    "num_decoder_layers": None,
    "num_heads": 8,
    "relative_attention_num_buckets": 32,
    "relative_attention_max_distance": 128,
    "layer_norm_epsilon": 1e-6,
    "feed_forward_proj": "relu",
    "pad_token_id": 0,
    "eos_token_id": 1,
    "decoder_start_token_id": 0,
    "tie_word_embeddings": True,
    "n_positions": MAX_LEN,
}
T5_NAMES = {  # config.json's names of the sizes (this project's name -> T5's)
    "src_vocab_size": "vocab_size",
    "tgt_vocab_size": "vocab_size",
    "d_model": "d_model",
    "n_heads": "num_heads",
    "head_dim": "d_kv",
    "d_ff": "d_ff",
    "n_encoder_layers": "num_layers",
    "n_decoder_layers": "num_decoder_layers",
    "relative_buckets": "relative_attention_num_buckets",
    "relative_max_distance": "relative_attention_max_distance",
    "max_len": "n_positions",
    "layer_norm_eps": "layer_norm_epsilon",
}
RELATIVE_KEYS = {
    stack: f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight" for stack in ("encoder", "decoder")
}
# A copy transformers ignores on loading (cross-attention has no position bias): accepted and dropped.
IGNORED = "decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight"


def detect(src: Source) -> bool:
    return hf.model_type(src) in MODEL_TYPES


def read_t5_config(src: Source) -> dict[str, Any]:
    if hf.model_type(src) not in MODEL_TYPES:
        raise CheckpointError(M_("{name}/config.json does not describe a T5 model", name=src.name))
    cfg = hf.read_config(src, DEFAULTS, "T5")
    if cfg["num_decoder_layers"] is None:
        cfg["num_decoder_layers"] = cfg["num_layers"]
    problems: list = []
    proj = cfg["feed_forward_proj"]
    parts = proj.split("-") if isinstance(proj, str) else []
    if not (len(parts) == 1 or (len(parts) == 2 and parts[0] == "gated")):
        problems.append(M_("{field} is neither ACT nor gated-ACT", field="feed_forward_proj"))
        parts = ["relu"]
    cfg["_gated"] = len(parts) == 2
    act = "gelu_new" if proj == "gated-gelu" else parts[-1]  # as T5Config: gated-gelu is the tanh approximation
    cfg["_activation"] = hf.activation({"feed_forward_proj": act}, "feed_forward_proj", problems)
    scale = cfg.get("scale_decoder_outputs")
    cfg["_rescale"] = cfg["tie_word_embeddings"] is not False if scale is None else scale
    if not isinstance(cfg["_rescale"], bool):
        problems.append(M_("{field} must be true or false", field="scale_decoder_outputs"))
    hf.refuse(f"{src.name}/config.json", problems)
    return cfg


def t5_config(cfg: dict[str, Any], where) -> TransformerConfig:
    return s2s.seq2seq_config(
        where,
        cfg,
        T5_NAMES,
        norm_first=True,
        final_norm=True,
        positional="relative",
        share_embeddings=True,
        tie_generator=True,
        generator_bias=False,
        scale_embeddings=False,
        activation=cfg["_activation"],
        ff_gated=cfg["_gated"],
        bias=False,
        scale_scores=False,
        rescale_output=cfg["_rescale"],
        norm="rms",
        extra={"imported_from": "Hugging Face T5"},
    )


def inspect(src: Source) -> CheckpointInfo:
    config = t5_config(read_t5_config(src), f"{src.name}/config.json")
    note = s2s.tokenizer_note(src.has(TOKENIZER_FILES[0]), M_("Tokenized with the folder's own sentencepiece model."))
    return hf.info(src, NAME, TITLE, config, note)


def load(src: Source, options: LoadOptions) -> tuple[Transformer, Tokenizer]:
    where = place(src.name, TITLE)
    s2s.refuse_vocab_files(options, where)
    cfg = read_t5_config(src)
    config = t5_config(cfg, where)  # limits checked before any weights are read
    hf.check_heads(where, config, options.n_heads)
    weights = hf.weights(src, TITLE, config)
    config = hf.with_tied_head(config, weights.state, "shared.weight")
    return s2s.assembled(convert_t5(weights.state, config, where), weights, where), t5_tokenizer(src, cfg, config)


def t5_tokenizer(src: Source, cfg: dict[str, Any], config: TransformerConfig) -> Tokenizer:
    if not has_files(src.path, TOKENIZER_FILES):
        ids = IdVocab(
            config.src_vocab_size, config.pad_id, config.bos_id, config.eos_id, min(2, config.src_vocab_size - 1)
        )
        return Tokenizer(ids, ids)
    tok_cfg = src.json("tokenizer_config.json")
    extra = tok_cfg.get("extra_ids", 100) if isinstance(tok_cfg, dict) else 100
    if type(extra) is not int or not 0 <= extra <= LIMITS["vocab"]:
        raise CheckpointError(
            M_("{name}/tokenizer_config.json: extra_ids is not a count of sentinel tokens", name=src.name)
        )
    vocab = t5_vocab(src.path, config.src_vocab_size, config.pad_id, config.eos_id, config.bos_id, extra)
    return Tokenizer(vocab, vocab)


def convert_t5(state: Mapping[str, torch.Tensor], config: TransformerConfig, where) -> Converted:
    m = Mapper(state, where)
    s2s.put_embeddings(m, config, "", hf.alias)
    for stack in ("encoder", "decoder"):
        m.put(f"{stack}.norm.weight", f"{stack}.final_layer_norm.weight")
    if IGNORED in state:
        m.take(IGNORED)
    for ours, stack in (("src_pe", "encoder"), ("tgt_pe", "decoder")):  # (buckets, heads): the first layer's table
        m.put(f"{ours}.relative_attention_bias.weight", RELATIVE_KEYS[stack])

    def attention(ours: str, theirs: str) -> None:
        for mine, hf_name in (("q_proj", "q"), ("k_proj", "k"), ("v_proj", "v"), ("out_proj", "o")):
            m.put(f"{ours}.{mine}.weight", f"{theirs}.{hf_name}.weight")

    def feed_forward(ours: str, theirs: str) -> None:
        if config.ff_gated:
            m.put(f"{ours}.linear1.weight", f"{theirs}.wi_0.weight")
            m.put(f"{ours}.linear3.weight", f"{theirs}.wi_1.weight")
        else:
            m.put(f"{ours}.linear1.weight", f"{theirs}.wi.weight")
        m.put(f"{ours}.linear2.weight", f"{theirs}.wo.weight")

    stacks = {  # each layer's sublayers in order: "layer.j.<name>" with its norm "layer.j.layer_norm" -> norm{j + 1}
        "encoder": (config.n_encoder_layers, ("SelfAttention", "DenseReluDense")),
        "decoder": (config.n_decoder_layers, ("SelfAttention", "EncDecAttention", "DenseReluDense")),
    }
    ours_of = {"SelfAttention": "self_attn", "EncDecAttention": "cross_attn", "DenseReluDense": "ff"}
    for stack, (n, parts) in stacks.items():
        for i in range(n):
            ours, theirs = f"{stack}.layers.{i}", f"{stack}.block.{i}.layer"
            for j, part in enumerate(parts):
                put = feed_forward if part == "DenseReluDense" else attention
                put(f"{ours}.{ours_of[part]}", f"{theirs}.{j}.{part}")
                m.put(f"{ours}.norm{j + 1}.weight", f"{theirs}.{j}.layer_norm.weight")
    m.finish()
    return Converted(config, m.out, m.origin)
