"""A local Hugging Face BERT folder (BertModel or BertForMaskedLM: config.json, model.safetensors or
pytorch_model.bin, tokenizer.json or vocab.txt). Read without transformers.

How it maps onto the one Transformer (configuration, not a fork):
    shape "encoder-only": the text is the source, [CLS] text [SEP] as the tokenizer's post-processor writes it
    embeddings.word_embeddings -> the one table, not scaled; position_embeddings -> learned positions;
        token_type_embeddings -> type_vocab_size rows, row 0 (segment A) added to every token; embeddings.LayerNorm
        -> a LayerNorm on embeddings + positions (embed_norm)
    post-LN blocks (as the paper): attention.output.LayerNorm after attention, output.LayerNorm after the FFN;
        attention.self.{query,key,value} and attention.output.dense -> q/k/v/out projections; intermediate.dense,
        output.dense -> the FFN, GELU (erf)
    BertForMaskedLM's head cls.predictions: transform.dense -> activation -> transform.LayerNorm (output_head "mlm"),
        then the output layer tied to the word embeddings with its own bias; BertModel: no head (output_head
        "none"); the pooler (a [CLS] classifier's input) is read and left out: nothing here shows it
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from i18n import M_, N_

from ...network.config import TransformerConfig
from ...network.transformer import Transformer
from ...text.tokenizer import Tokenizer
from . import hf_common as hf
from . import hf_one_stack as one
from .common import Converted, Mapper
from .source import CheckpointInfo, LoadOptions, Source

NAME = "bert"
TITLE = M_("Hugging Face BERT folder")
MODEL_TYPES = {"bert": N_("BERT")}
ARCHITECTURES = ("BertModel", "BertForMaskedLM")

DEFAULTS: dict[str, Any] = {
    "vocab_size": 30522,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "pad_token_id": 0,
    "position_embedding_type": "absolute",
    "is_decoder": False,
    "architectures": ["BertModel"],
}
IGNORED = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")  # read and left out


def detect(src: Source) -> bool:
    return hf.model_type(src) in MODEL_TYPES


def read_bert_config(src: Source) -> dict[str, Any]:
    cfg = one.read_config(src, DEFAULTS, MODEL_TYPES)
    where = f"{src.name}/config.json"
    one.ints(cfg, where, "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
             "intermediate_size", "max_position_embeddings", "type_vocab_size")  # fmt: skip
    problems: list = []
    cfg["_activation"] = hf.activation(cfg, "hidden_act", problems)
    if cfg["position_embedding_type"] != "absolute":
        problems.append(M_("{field} is not supported (only absolute positions)", field="position_embedding_type"))
    if cfg["is_decoder"] is not False:
        problems.append(M_("{field} is not supported", field="is_decoder"))
    arch = cfg["architectures"]
    if not (isinstance(arch, list) and len(arch) == 1 and arch[0] in ARCHITECTURES):
        problems.append(M_("{field} must be one of {allowed}", field="architectures", allowed=", ".join(ARCHITECTURES)))
    hf.refuse(where, problems)
    cfg["_mlm"] = arch[0] == "BertForMaskedLM"
    return cfg


def bert_config(cfg: dict[str, Any], where) -> TransformerConfig:
    pad = cfg.get("pad_token_id")
    pad = pad if isinstance(pad, int) and 0 <= pad < cfg["vocab_size"] else 0
    return one.stack_config(  # [CLS] and [SEP] come from the tokenizer (hf_one_stack.load)
        where, "encoder-only", cfg["vocab_size"], cfg["num_hidden_layers"], cfg["max_position_embeddings"],
        {"pad": pad, "bos": pad, "eos": pad}, d_model=cfg["hidden_size"], n_heads=cfg["num_attention_heads"],
        d_ff=cfg["intermediate_size"], norm_first=False, final_norm=False, positional="learned", tie_generator=True,
        generator_bias=True, output_head="mlm" if cfg["_mlm"] else "none", type_vocab_size=cfg["type_vocab_size"],
        activation=cfg["_activation"], norm="layernorm", layer_norm_eps=cfg["layer_norm_eps"], embed_norm=True,
        extra={"imported_from": "Hugging Face BERT"},
    )  # fmt: skip


def inspect(src: Source) -> CheckpointInfo:
    return one.info(src, NAME, TITLE, bert_config(read_bert_config(src), f"{src.name}/config.json"))


def load(src: Source, options: LoadOptions) -> tuple[Transformer, Tokenizer]:
    return one.load(src, options, TITLE, read_bert_config, bert_config, convert_bert, "bert")


def convert_bert(state: Mapping[str, torch.Tensor], config: TransformerConfig, where) -> Converted:
    p = "bert." if "bert.embeddings.word_embeddings.weight" in state else ""
    m = Mapper(state, where)
    m.require(f"{p}embeddings.word_embeddings.weight")
    words = state[f"{p}embeddings.word_embeddings.weight"]
    m.put("src_embed.weight", f"{p}embeddings.word_embeddings.weight")
    m.put("src_pe.weight", f"{p}embeddings.position_embeddings.weight", lambda t: t[: config.max_len])
    m.put("type_embed.weight", f"{p}embeddings.token_type_embeddings.weight")
    m.put_linear("encoder.input_norm", f"{p}embeddings.LayerNorm")
    for key in IGNORED:
        if f"{p}{key}" in state:
            m.take(f"{p}{key}")
    for i in range(config.n_encoder_layers):
        ours, theirs = f"encoder.layers.{i}", f"{p}encoder.layer.{i}"
        for mine, hf_name in (("q_proj", "query"), ("k_proj", "key"), ("v_proj", "value")):
            m.put_linear(f"{ours}.self_attn.{mine}", f"{theirs}.attention.self.{hf_name}")
        m.put_linear(f"{ours}.self_attn.out_proj", f"{theirs}.attention.output.dense")
        m.put_linear(f"{ours}.norm1", f"{theirs}.attention.output.LayerNorm")
        m.put_linear(f"{ours}.ff.linear1", f"{theirs}.intermediate.dense")
        m.put_linear(f"{ours}.ff.linear2", f"{theirs}.output.dense")
        m.put_linear(f"{ours}.norm2", f"{theirs}.output.LayerNorm")
    if config.output_head == "mlm":
        m.put_linear("head_transform.dense", "cls.predictions.transform.dense")
        m.put_linear("head_transform.norm", "cls.predictions.transform.LayerNorm")
        m.put("generator.bias", "cls.predictions.bias")
        hf.alias(m, "cls.predictions.decoder.weight", words, f"{p}embeddings.word_embeddings.weight")
        if "cls.predictions.decoder.bias" in state and "cls.predictions.bias" in state:
            hf.alias(m, "cls.predictions.decoder.bias", state["cls.predictions.bias"], "cls.predictions.bias")
    m.finish()
    return Converted(config, m.out, m.origin)
