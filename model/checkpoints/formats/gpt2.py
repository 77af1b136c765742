"""A local Hugging Face GPT-2 folder (GPT2LMHeadModel or GPT2Model: config.json, model.safetensors or
pytorch_model.bin, tokenizer.json or vocab.json + merges.txt). Read without transformers.

How it maps onto the one Transformer (configuration, not a fork):
    shape "decoder-only": the text is the decoder's one sequence, no encoder, no cross-attention
    transformer.wte -> the one embedding table, not scaled by sqrt(d_model); transformer.wpe -> learned positions
    pre-LN blocks (ln_1 before attention, ln_2 before the MLP), ln_f the final norm; LayerNorm eps layer_norm_epsilon
    attn.c_attn is a Conv1D (y = x W + b, W stored (in, out)): its columns are W^Q | W^K | W^V, transposed into the
        three projections; attn.c_proj, mlp.c_fc, mlp.c_proj are Conv1D too (transposed); GELU with tanh (gelu_new)
    lm_head tied to wte, no bias
    scale_attn_weights: the scores divided by sqrt(d_head) (scale_scores); scale_attn_by_inverse_layer_idx: layer i's
        also by i + 1 (scale_by_layer; Stanford CRFM's GPT-2 runs); reorder_and_upcast_attn: the same scores computed
        in float32, as this model always computes them
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from i18n import M_, N_

from ...network.config import TransformerConfig
from ...network.transformer import Transformer
from ...text.tokenizer import Tokenizer
from ..checkpoint import CheckpointError
from . import hf_common as hf
from . import hf_one_stack as one
from .common import Converted, Mapper
from .source import CheckpointInfo, LoadOptions, Source

NAME = "gpt2"
TITLE = M_("Hugging Face GPT-2 folder")
MODEL_TYPES = {"gpt2": N_("GPT-2")}

DEFAULTS: dict[str, Any] = {
    "vocab_size": 50257,
    "n_positions": 1024,
    "n_embd": 768,
    "n_layer": 12,
    "n_head": 12,
    "n_inner": None,
    "activation_function": "gelu_new",
    "layer_norm_epsilon": 1e-5,
    "scale_attn_weights": True,
    "scale_attn_by_inverse_layer_idx": False,
    "reorder_and_upcast_attn": False,
    "bos_token_id": 50256,
    "eos_token_id": 50256,
    "tie_word_embeddings": True,
}
# buffers older files store beside the weights (the causal mask): accepted and dropped
BUFFERS = ("attn.bias", "attn.masked_bias")


def detect(src: Source) -> bool:
    return hf.model_type(src) in MODEL_TYPES


def read_gpt2_config(src: Source) -> dict[str, Any]:
    cfg = one.read_config(src, DEFAULTS, MODEL_TYPES)
    where = f"{src.name}/config.json"
    one.ints(cfg, where, "vocab_size", "n_positions", "n_embd", "n_layer", "n_head")
    if cfg["n_inner"] is None:
        cfg["n_inner"] = 4 * cfg["n_embd"]
    problems: list = []
    cfg["_activation"] = hf.activation(cfg, "activation_function", problems)
    hf.booleans(cfg, problems, "scale_attn_weights", "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn")
    if cfg["tie_word_embeddings"] is False:
        problems.append(M_("{field} is not supported", field="tie_word_embeddings: false"))
    hf.refuse(where, problems)
    return cfg


def gpt2_config(cfg: dict[str, Any], where) -> TransformerConfig:
    return one.stack_config(
        where, "decoder-only", cfg["vocab_size"], cfg["n_layer"], cfg["n_positions"],
        one.special_ids(cfg, cfg["vocab_size"]), d_model=cfg["n_embd"], n_heads=cfg["n_head"], d_ff=cfg["n_inner"],
        positional="learned", tie_generator=True, activation=cfg["_activation"], norm="layernorm",
        layer_norm_eps=cfg["layer_norm_epsilon"], scale_scores=cfg["scale_attn_weights"],
        scale_by_layer=cfg["scale_attn_by_inverse_layer_idx"], extra={"imported_from": "Hugging Face GPT-2"},
    )  # fmt: skip


def inspect(src: Source) -> CheckpointInfo:
    return one.info(src, NAME, TITLE, gpt2_config(read_gpt2_config(src), f"{src.name}/config.json"))


def load(src: Source, options: LoadOptions) -> tuple[Transformer, Tokenizer]:
    return one.load(src, options, TITLE, read_gpt2_config, gpt2_config, convert_gpt2, "gpt2")


def _conv1d(t: torch.Tensor) -> torch.Tensor:
    """A Conv1D weight (in, out) as a Linear weight (out, in): a transposed view that the model adopts as it is
    (F.linear then computes x @ W, as Conv1D does; nothing is copied to make it contiguous)."""
    return t.t()


def _third(index: int, d: int, weight: bool):
    """W^Q, W^K or W^V out of c_attn: columns index*d .. (index+1)*d of the (d, 3d) weight, or of the (3d,) bias."""

    def take(t: torch.Tensor) -> torch.Tensor:
        if t.shape[-1] != 3 * d:
            raise CheckpointError(M_("a fused tensor of shape {shape} cannot be split into {parts} equal parts",
                                     shape=tuple(t.shape), parts=3))  # fmt: skip
        part = t[..., index * d : (index + 1) * d]
        return _conv1d(part) if weight else part

    return take


def convert_gpt2(state: Mapping[str, torch.Tensor], config: TransformerConfig, where) -> Converted:
    prefix = "transformer." if "transformer.wte.weight" in state else ""
    m = Mapper(state, where)
    m.require(f"{prefix}wte.weight")
    m.put("src_embed.weight", f"{prefix}wte.weight")
    hf.alias(m, "lm_head.weight", state[f"{prefix}wte.weight"], f"{prefix}wte.weight")
    m.put("tgt_pe.weight", f"{prefix}wpe.weight", lambda t: t[: config.max_len])
    m.put_linear("decoder.norm", f"{prefix}ln_f")
    d = config.d_model
    for i in range(config.n_decoder_layers):
        ours, theirs = f"decoder.layers.{i}", f"{prefix}h.{i}"
        for index, proj in enumerate(("q_proj", "k_proj", "v_proj")):
            m.put(
                f"{ours}.self_attn.{proj}.weight", f"{theirs}.attn.c_attn.weight", _third(index, d, True), " (Conv1D)"
            )
            m.put(f"{ours}.self_attn.{proj}.bias", f"{theirs}.attn.c_attn.bias", _third(index, d, False))
        m.put(f"{ours}.self_attn.out_proj.weight", f"{theirs}.attn.c_proj.weight", _conv1d, " (Conv1D)")
        m.put(f"{ours}.self_attn.out_proj.bias", f"{theirs}.attn.c_proj.bias")
        m.put_linear(f"{ours}.norm1", f"{theirs}.ln_1")
        m.put_linear(f"{ours}.norm3", f"{theirs}.ln_2")
        m.put(f"{ours}.ff.linear1.weight", f"{theirs}.mlp.c_fc.weight", _conv1d, " (Conv1D)")
        m.put(f"{ours}.ff.linear1.bias", f"{theirs}.mlp.c_fc.bias")
        m.put(f"{ours}.ff.linear2.weight", f"{theirs}.mlp.c_proj.weight", _conv1d, " (Conv1D)")
        m.put(f"{ours}.ff.linear2.bias", f"{theirs}.mlp.c_proj.bias")
        for buffer in BUFFERS:
            if f"{theirs}.{buffer}" in state:
                m.take(f"{theirs}.{buffer}")
    m.finish()
    return Converted(config, m.out, m.origin)
