"""A local Hugging Face BART or mBART folder (config.json, model.safetensors or pytorch_model.bin, and the
tokenizer files: BART vocab.json + merges.txt, mBART sentencepiece.bpe.model). Read without transformers.

How it maps onto the one Transformer (configuration, not a fork):
    model.shared -> the embeddings of both sides (* sqrt(d_model) when scale_embedding: mBART yes, BART no)
    model.{encoder,decoder}.embed_positions (max_position_embeddings + 2, d): learned positions; BART reads
        row position + 2 (rows 0 and 1 are never used), so rows 2.. are the table of positions 0..
    layernorm_embedding -> a LayerNorm on embeddings + positions (config.embed_norm)
    layers: self_attn / encoder_attn (-> cross_attn) q,k,v,out_proj; fc1/fc2, GELU; norms as in Marian
    BART: post-LN, no final norms;  mBART: pre-LN with a final LayerNorm per stack (model.*.layer_norm)
    logits = lm_head(h) + final_logits_bias, lm_head tied to the embeddings unless the file stores its own
Decoding starts from decoder_start_token_id (</s> in both), then forced_bos_token_id when set (BART's <s>,
mBART-50's target language code): the first output token is forced, as Hugging Face's generate() does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from i18n import M_, N_

from ...network.config import TransformerConfig
from ...network.transformer import Transformer
from ...text.tokenizer import IdVocab, Tokenizer
from ..checkpoint import CheckpointError
from . import hf_common as hf
from . import hf_seq2seq as s2s
from .common import Converted, Mapper
from .common import where as place
from .hf_layers import put_bart_layers
from .hf_tokenizers import bart_vocabs, has_files, mbart_vocabs
from .source import CheckpointInfo, LoadOptions, Source

NAME = "bart"
TITLE = M_("Hugging Face BART / mBART folder")
MODEL_TYPES = {"bart": N_("BART"), "mbart": N_("mBART")}
TOKENIZER_FILES = {"bart": ("vocab.json", "merges.txt"), "mbart": ("sentencepiece.bpe.model",)}
POSITION_OFFSET = 2  # BartLearnedPositionalEmbedding reads row position + 2

DEFAULTS: dict[str, Any] = {
    **s2s.BART_DEFAULTS,
    "vocab_size": 50265,
    "pad_token_id": 1,
    "bos_token_id": 0,
    "eos_token_id": 2,
    "decoder_start_token_id": 2,
    "forced_bos_token_id": None,
}
# Fields of older configs that say which block each family has: (BART's value, mBART's value, meaning).
BLOCK_FIELDS = {
    "normalize_before": (False, True, N_("pre-LN blocks")),
    "add_final_layer_norm": (False, True, N_("a final LayerNorm on each stack")),
    "normalize_embedding": (True, True, N_("a LayerNorm on the embeddings")),
    "add_bias_logits": (False, False, N_("a bias inside the output projection")),
    "static_position_embeddings": (False, False, N_("sinusoidal positions")),
}


def detect(src: Source) -> bool:
    return hf.model_type(src) in MODEL_TYPES


def read_bart_config(src: Source) -> tuple[dict[str, Any], str]:
    family = hf.model_type(src)
    if family not in MODEL_TYPES:
        raise CheckpointError(M_("{name}/config.json does not describe a BART or mBART model", name=src.name))
    cfg = hf.read_config(src, {**DEFAULTS, "decoder_start_token_id": None} if family == "mbart" else DEFAULTS, family)
    problems: list = []
    for field, (bart, mbart, meaning) in BLOCK_FIELDS.items():
        want = mbart if family == "mbart" else bart
        if field in cfg and bool(cfg[field]) != want:
            problems.append(M_("{field} differs from what {family} uses ({meaning})", field=field,
                               family=M_(MODEL_TYPES[family]), meaning=M_(meaning)))  # fmt: skip
    for a, b in (("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim")):
        if cfg[a] != cfg[b]:
            problems.append(M_("{a} differs from {b} (this model uses one value for both stacks)", a=a, b=b))
    cfg["_activation"] = hf.activation(cfg, "activation_function", problems)
    hf.booleans(cfg, problems, "scale_embedding")
    hf.refuse(f"{src.name}/config.json", problems)
    return cfg, family


def bart_config(cfg: dict[str, Any], family: str, where) -> TransformerConfig:
    mbart = family == "mbart"
    return s2s.seq2seq_config(
        where,
        cfg,
        s2s.BART_NAMES,
        tgt_vocab_size=cfg["vocab_size"],
        norm_first=mbart,
        final_norm=mbart,
        positional="learned",
        share_embeddings=True,
        tie_generator=True,
        generator_bias=True,
        scale_embeddings=cfg["scale_embedding"],
        activation=cfg["_activation"],
        norm="layernorm",
        layer_norm_eps=1e-5,
        embed_norm=True,
        forced_bos_id=cfg.get("forced_bos_token_id"),
        extra={"imported_from": "Hugging Face " + ("mBART" if mbart else "BART")},
    )


def inspect(src: Source) -> CheckpointInfo:
    cfg, family = read_bart_config(src)
    config = bart_config(cfg, family, f"{src.name}/config.json")
    tokenized = all(src.has(f) for f in TOKENIZER_FILES[family])
    note = s2s.tokenizer_note(tokenized, M_("Tokenized with the folder's own tokenizer files."))
    return hf.info(src, NAME, TITLE, config, note)


def load(src: Source, options: LoadOptions) -> tuple[Transformer, Tokenizer]:
    where = place(src.name, TITLE)
    s2s.refuse_vocab_files(options, where)
    cfg, family = read_bart_config(src)
    config = bart_config(cfg, family, where)  # limits checked before any weights are read
    hf.check_heads(where, config, options.n_heads)
    weights = hf.weights(src, TITLE, config)
    config = hf.with_tied_head(config, weights.state, "model.shared.weight")
    model = s2s.assembled(convert_bart(weights.state, config, where), weights, where)
    return model, bart_tokenizer(src, cfg, family, config)


def bart_tokenizer(src: Source, cfg: dict[str, Any], family: str, config: TransformerConfig) -> Tokenizer:
    start, forced = config.bos_id, config.forced_bos_id
    if not has_files(src.path, TOKENIZER_FILES[family]):
        ids = IdVocab(config.src_vocab_size, config.pad_id, start, config.eos_id, min(3, config.src_vocab_size - 1))
        return Tokenizer(ids, ids)
    if family == "bart":
        return Tokenizer(*bart_vocabs(src.path, config.src_vocab_size, start, forced, config.pad_id, config.eos_id))
    tok_cfg = src.json("tokenizer_config.json")
    src_lang = tok_cfg.get("src_lang") if isinstance(tok_cfg, dict) else None
    lang = src_lang or "en_XX"
    return Tokenizer(*mbart_vocabs(src.path, config.src_vocab_size, lang, start, forced, config.pad_id, config.eos_id))


def convert_bart(state: Mapping[str, torch.Tensor], config: TransformerConfig, where) -> Converted:
    m = Mapper(state, where)
    s2s.put_embeddings(m, config, "model.", hf.alias)

    def positions(t: torch.Tensor) -> torch.Tensor:
        if t.dim() != 2 or t.size(0) != config.max_len + POSITION_OFFSET:
            raise CheckpointError(
                M_(
                    "the stored positions have shape {shape}; max_position_embeddings={n} needs {rows} rows (n + 2)",
                    shape=tuple(t.shape),
                    n=config.max_len,
                    rows=config.max_len + POSITION_OFFSET,
                )
            )
        return t[POSITION_OFFSET:]

    for ours, stack in (("src_pe", "encoder"), ("tgt_pe", "decoder")):
        m.put(f"{ours}.weight", f"model.{stack}.embed_positions.weight", positions, " rows 2.. (BART's offset)")
        m.put_linear(f"{stack}.input_norm", f"model.{stack}.layernorm_embedding")
        if config.has_final_norm:
            m.put_linear(f"{stack}.norm", f"model.{stack}.layer_norm")
    put_bart_layers(m, config)  # the layer names Marian and BART share
    m.finish()
    return Converted(config, m.out, m.origin)
