"""What the Hugging Face encoder-decoder readers (marian.py, t5.py, bart.py) share: the refusal of vocabulary files,
the configuration's common part, the embeddings and output layer, and the model assembled with its weights' record.

Imports nothing of hf_common.py, which imports marian.py: marian.py can use this module, not that one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from i18n import M_, Message

from ...network.config import TransformerConfig
from ...network.transformer import Transformer
from ..checkpoint import CheckpointError
from .common import Converted, Mapper, assemble, make_config
from .source import LoadOptions, Weights

# config.json's names of the sizes BART, mBART and MarianMT share (this project's name -> theirs)
BART_NAMES = {
    "src_vocab_size": "vocab_size",
    "d_model": "d_model",
    "n_heads": "encoder_attention_heads",
    "d_ff": "encoder_ffn_dim",
    "n_encoder_layers": "encoder_layers",
    "n_decoder_layers": "decoder_layers",
    "max_len": "max_position_embeddings",
}

# config.json's defaults for those sizes, the same in BartConfig and MarianConfig
BART_DEFAULTS: dict[str, Any] = {
    "max_position_embeddings": 1024,
    "encoder_layers": 12,
    "encoder_ffn_dim": 4096,
    "encoder_attention_heads": 16,
    "decoder_layers": 12,
    "decoder_ffn_dim": 4096,
    "decoder_attention_heads": 16,
    "activation_function": "gelu",
    "d_model": 1024,
    "scale_embedding": False,
    "tie_word_embeddings": True,
}

Alias = Callable[[Mapper, str, torch.Tensor, str], None]  # checks a stored copy of a tied tensor (hf_common.alias)


def refuse_vocab_files(options: LoadOptions, where) -> None:
    """A folder brings its own tokenizer: vocabulary files given with it are refused."""
    if options.given_vocab:
        raise CheckpointError(
            M_("{where} carries its own tokenizer; vocabulary files are only for state_dict formats", where=where)
        )


def tokenizer_note(tokenized: bool, own: Message) -> Message:
    """The inspection's note on the tokenizer: `own` when the folder has its tokenizer files."""
    return own if tokenized else M_("No tokenizer files: token ids only.")


def seq2seq_config(where, cfg: dict[str, Any], names: Mapping[str, str], **fields) -> TransformerConfig:
    """make_config for a Hugging Face encoder-decoder: each field of `names` read from config.json's field of that
    name, no dropout, decoding from decoder_start_token_id to eos_token_id (pad_token_id: padding), then `fields`."""
    return make_config(
        where,
        **{ours: cfg[theirs] for ours, theirs in names.items()},
        dropout=0.0,
        pad_id=cfg["pad_token_id"],
        bos_id=cfg["decoder_start_token_id"],
        eos_id=cfg["eos_token_id"],
        **fields,
    )


def put_embeddings(m: Mapper, config: TransformerConfig, prefix: str, alias: Alias, head_is: str = "") -> None:
    """The token embeddings and the output layer, stored under `prefix` ("model." or ""): `<prefix>shared.weight`
    for both sides when config.share_embeddings (each stack's stored copy checked by `alias`), else each stack's own;
    the output layer tied to the target side's (a stored lm_head checked, named `head_is` in the message) or its own
    lm_head; with config.generator_bias, final_logits_bias, zero when the file lacks it (as transformers starts it)."""
    shared = f"{prefix}shared.weight"
    stacks = [f"{prefix}{stack}.embed_tokens.weight" for stack in ("encoder", "decoder")]
    if config.share_embeddings:
        m.require(shared)
        m.put("src_embed.weight", shared)
        target = m.state[shared]
        for key in stacks:
            alias(m, key, target, shared)
    else:
        m.require(*stacks)
        m.put("src_embed.weight", stacks[0])
        m.put("tgt_embed.weight", stacks[1])
        target = m.state[stacks[1]]
    if config.tie_generator:
        alias(m, "lm_head.weight", target, head_is or shared)
    else:
        m.put("generator.weight", "lm_head.weight")
    if not config.generator_bias:
        return
    if "final_logits_bias" in m.state:
        m.put("generator.bias", "final_logits_bias", lambda t: t.reshape(-1), " (1, V) -> (V,)")
    else:
        m.out["generator.bias"] = torch.zeros(config.tgt_vocab_size)


def assembled(converted: Converted, weights: Weights, where) -> Transformer:
    """The model of `converted`, recording the precision its weights were stored in and whether they are mapped."""
    converted.config.extra["precision"] = weights.precision
    converted.mapped, converted.dtype = weights.mapped, weights.kept
    return assemble(converted, where)
