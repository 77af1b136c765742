"""What the Hugging Face folders of one-stack models share (GPT-2, Llama / Qwen2, BERT): config.json over the
family's defaults, the special ids, the load sequence (config and limits before any weights, then the
weights, the mapping, the tokenizer) and the inspection record.

Values from config.json are file contents: messages name fields, never echo values from the file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from i18n import M_, join_messages

from ...network.config import LIMITS, TransformerConfig
from ...network.transformer import Transformer
from ...text.tokenizer import IdVocab, Tokenizer
from ..checkpoint import CheckpointError
from . import hf_common as hf
from .common import Converted, assemble, make_config
from .common import where as place
from .source import CheckpointInfo, LoadOptions, Source
from .tokenizer_json import folder_vocab

TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt")


def read_config(src: Source, defaults: Mapping[str, Any], model_types: Mapping[str, str]) -> dict[str, Any]:
    """config.json of one of `model_types` (model_type -> the family's name) over `defaults`,
    generation_config.json's token ids over both; bos/eos/pad ids checked to be integers or null (a list of end
    tokens keeps its first: decoding here stops at one end token)."""
    kind = hf.model_type(src)
    if kind not in model_types:
        raise CheckpointError(M_("{name}/config.json does not describe a {family} model", name=src.name,
                                 family=join_messages(" / ", (M_(t) for t in model_types.values()))))  # fmt: skip
    cfg = hf.config_json(src, defaults, ("eos_token_id", "pad_token_id", "bos_token_id"))
    family = M_(model_types[kind])
    where = f"{src.name}/config.json"
    if cfg.get("is_encoder_decoder") is True:
        raise CheckpointError(M_("{where}: an encoder-decoder {family} model is not this format", where=where,
                                 family=family))  # fmt: skip
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        value = cfg.get(key)
        if isinstance(value, list) and value and all(type(v) is int for v in value):
            cfg[key] = value[0]
        elif value is not None and type(value) is not int:
            raise CheckpointError(M_("{where}: {field} must be an integer", where=where, field=key))
    return cfg


def ints(cfg: Mapping[str, Any], where: str, *keys: str) -> None:
    """Refuse, naming the field, a value of these keys that is not an integer (before anything is computed)."""
    for key in keys:
        if type(cfg.get(key)) is not int:
            raise CheckpointError(M_("{where}: {field} must be an integer", where=where, field=key))


def special_ids(cfg: Mapping[str, Any], vocab_size: int) -> dict[str, int]:
    """bos, eos, pad ids for TransformerConfig: the config's, a missing one falling back to another (pad: the end
    token; decoder-only models never mask by pad), each inside the vocabulary."""
    inside = {
        k: v for k in ("bos", "eos", "pad") if (v := cfg.get(f"{k}_token_id")) is not None and 0 <= v < vocab_size
    }
    fallback = inside.get("eos", inside.get("bos", inside.get("pad", 0)))
    return {k: inside.get(k, fallback) for k in ("bos", "eos", "pad")}


def stack_config(
    where, shape: str, vocab: int, layers: int, max_len: int, ids: Mapping[str, int], **fields: Any
) -> TransformerConfig:
    """The one Transformer's configuration of a one-stack folder (limits checked, before any weights): `shape`
    ("decoder-only" or "encoder-only") of `layers` layers, one vocabulary and one embedding table, not scaled, no
    dropout, at most LIMITS["max_len"] positions (a longer table: its first rows; RoPE has none), the bos/eos/pad
    `ids`; a decoder is pre-LN with a final norm and an output layer without bias. `fields`: the family's own."""
    decoder = shape == "decoder-only"
    common = dict(shape=shape, src_vocab_size=vocab, tgt_vocab_size=vocab, n_encoder_layers=0 if decoder else layers,
                  n_decoder_layers=layers if decoder else 0, dropout=0.0, max_len=min(max_len, LIMITS["max_len"]),
                  share_embeddings=True, scale_embeddings=False, pad_id=ids["pad"], bos_id=ids["bos"],
                  eos_id=ids["eos"], **(dict(norm_first=True, final_norm=True, generator_bias=False) if decoder else {}))  # fmt: skip
    return make_config(where, **{**common, **fields})


def info(src: Source, name: str, title: str, config: TransformerConfig) -> CheckpointInfo:
    tokenized = any(src.has(f) for f in TOKENIZER_FILES)
    note = (
        M_("Tokenized with the folder's own tokenizer files.")
        if tokenized
        else M_("No tokenizer files: token ids only.")
    )
    return hf.info(src, name, title, config, note)


def tokenizer(src: Source, cfg: Mapping[str, Any], config: TransformerConfig, kind: str) -> Tokenizer:
    """The folder's own tokenizer (tokenizer_json.py), or token ids only without tokenizer files."""
    ids = {k: cfg.get(f"{k}_token_id") for k in ("bos", "eos", "pad")}
    vocab = folder_vocab(src.path, config.src_vocab_size, kind, ids, keep_suffix=config.shape == "encoder-only")
    if vocab is None:
        vocab = IdVocab(config.src_vocab_size, config.pad_id, config.bos_id, config.eos_id, config.eos_id)
    return Tokenizer(vocab, vocab)


def load(
    src: Source,
    options: LoadOptions,
    title: str,
    read: Callable[[Source], dict[str, Any]],
    make: Callable[[dict[str, Any], Any], TransformerConfig],
    convert: Callable[[Mapping[str, torch.Tensor], TransformerConfig, Any], Converted],
    kind: str,
) -> tuple[Transformer, Tokenizer]:
    """The load of every one-stack family: config and limits before any weights, then weights, mapping, tokenizer.

    The tokenizer is read before the weights: a hostile tokenizer file is refused before anything is allocated;
    an encoder's [CLS] / [SEP] come from it (the config of BERT names neither)."""
    where = place(src.name, title)
    if options.given_vocab:
        raise CheckpointError(
            M_("{where} carries its own tokenizer; vocabulary files are only for state_dict formats", where=where)
        )
    cfg = read(src)
    config = make(cfg, where)  # limits checked before any weights are read
    hf.check_heads(where, config, options.n_heads)
    tok = tokenizer(src, cfg, config, kind)
    if config.shape == "encoder-only":  # the ids an encoder's source starts and ends with: the tokenizer's
        vocab = tok.source
        config.bos_id, config.eos_id, config.pad_id = vocab.bos_id, vocab.eos_id, vocab.pad_id
    weights = hf.weights(src, title, config)
    converted = convert(weights.state, config, where)
    converted.config.extra["precision"] = weights.precision
    converted.mapped, converted.dtype = weights.mapped, weights.kept
    return assemble(converted, where), tok
