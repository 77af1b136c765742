"""What the Llama-like Hugging Face families share (Llama, Qwen2, Mistral, Gemma 2 and 3, Phi-3, OLMo 2, Qwen3): one
reader of config.json, one mapping onto the one Transformer, one weight mapping, each driven by the family's `Family`
table. A family's format module is its table and the protocol's names (`protocol`); read without transformers, from a
local folder (config.json, model.safetensors or its shards or pytorch_model.bin, tokenizer.json or tokenizer.model).

How Llama maps onto the one Transformer (configuration, not a fork), and every family with it:
    shape "decoder-only": the text is the decoder's one sequence, no encoder, no cross-attention
    model.embed_tokens -> the one embedding table; no positions added to it: RoPE inside every self-attention
        (positional="rope"), the "rotate_half" pairing (pe_layout="half"), base rope_theta, on the first
        partial_rotary_factor * head_dim dims when the config says so (rope_dim)
    grouped-query attention: num_key_value_heads key/value heads, query head h reads key/value head
        h // (num_attention_heads / num_key_value_heads) (n_kv_heads)
    pre-LN blocks with RMS norms (input_layernorm, post_attention_layernorm), model.norm the final norm
    SwiGLU: down_proj(silu(gate_proj x) * up_proj x) -> the gated feed-forward (linear1 gate, linear3 up, linear2 down)
    biases (`biases`): none; Llama's attention_bias (with mlp_bias) on every projection; Qwen2's on q, k, v only
    lm_head: its own unless tie_word_embeddings
What the other families change:
    sliding_window + layer_types ("sliding_attention" -> "local", "full_attention" -> "global"), or the family's
        default pattern (Gemma 2: every other layer local; Gemma 3: five local, one global); without layer_types a
        sliding_window makes every layer local (Mistral, Phi-3); use_sliding_window false makes none (Qwen3)
    Gemma: embeddings scaled by sqrt(hidden_size), RMS norms that read their weight as 1 + w (norm="rms_plus_one"),
        the scores scaled by query_pre_attn_scalar^-1/2 (query_scale), soft-capping of the attention logits (Gemma 2)
        and of the final logits, a norm before and after each sublayer (block_norms="sandwich")
    Gemma 3: q/k norms per head, the local layers' own RoPE base (rope_local_base_freq or the "sliding_attention"
        rope_parameters); Qwen3: q/k norms per head; OLMo 2: q/k norms over the whole projections and a norm only on
        each sublayer's output (block_norms="output")
    Phi-3: qkv_proj (W^Q | W^K | W^V rows) and gate_up_proj (gate | up rows) read as views into q/k/v and gate/up
Refused by name: RoPE scalings (linear, dynamic, YaRN, Llama 3's: hf_common.rope), a vision tower (a multimodal
Gemma 3), attention biases where the family has none, a bidirectional Gemma 3, Gemma 3's attention soft-capping
(transformers does not apply it), Qwen2's sliding window (the family's `refused`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from i18n import M_

from ...network.config import TransformerConfig
from ...network.transformer import Transformer
from ...text.tokenizer import Tokenizer
from ..checkpoint import CheckpointError
from . import hf_common as hf
from . import hf_one_stack as one
from .common import Converted, Mapper
from .source import CheckpointInfo, LoadOptions, Source

LLAMA_DEFAULTS: dict[str, Any] = {
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
    "sliding_window": None,
}
GEMMA_DEFAULTS: dict[str, Any] = {  # over LLAMA_DEFAULTS for every Gemma (Gemma2Config's, Gemma3TextConfig's)
    "sliding_window": 4096,
    "query_pre_attn_scalar": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "tie_word_embeddings": True,
}
LAYER_TYPES = {"sliding_attention": "local", "full_attention": "global"}


def every_other(n: int, cfg: Mapping[str, Any]) -> list[str]:
    """Gemma 2's pattern: layers 0, 2, 4, ... local, 1, 3, 5, ... global."""
    return ["local" if (i + 1) % 2 else "global" for i in range(n)]


def one_in(n: int, cfg: Mapping[str, Any]) -> list[str]:
    """Gemma 3's pattern: every sliding_window_pattern-th layer global (default 6), the others local."""
    period = cfg.get("sliding_window_pattern", cfg.get("_sliding_window_pattern", 6))
    period = period if type(period) is int and period > 0 else 6
    return ["global" if (i + 1) % period == 0 else "local" for i in range(n)]


@dataclass(frozen=True)
class Family:
    """What one Llama-like family changes. Weight names are transformers' (model.layers.i.*)."""

    name: str  # the format's NAME and its tokenizer kind
    label: str  # the family as the folder's title names it ("Qwen3"): a name, not translated (no catalog entry)
    model_types: dict[str, str]  # config.json's model_type -> the family's name (a name: not translated)
    defaults: dict[str, Any] = field(default_factory=dict)  # over LLAMA_DEFAULTS: transformers' config defaults
    gemma: bool = False  # GEMMA_DEFAULTS, hidden_activation, embeddings * sqrt(d), (1 + w) norms,
    # query_pre_attn_scalar, final soft-capping, sandwich norms
    qk_norm: str = "none"  # "head" (Gemma 3, Qwen3) or "all" (OLMo 2)
    block_norms: str = "default"  # "sandwich" (Gemma) or "output" (OLMo 2)
    fused: bool = False  # Phi-3's qkv_proj and gate_up_proj
    local_base: bool = False  # the local layers' own RoPE base (Gemma 3)
    attn_softcap: bool = False  # attn_logit_softcapping is applied (Gemma 2); else a non-null one is refused
    pattern: Callable[[int, Mapping[str, Any]], list[str]] | None = None  # layer kinds without layer_types
    refused: dict[str, Any] = field(default_factory=dict)  # fields refused by name unless they hold this value
    also_detects: tuple[str, ...] = ()  # model types recognised only to be refused by name (a multimodal Gemma 3)
    biases: dict[str, str] = field(default_factory=dict)  # model type -> "config" (Llama) or "qkv" (Qwen2); else none

    @property
    def title(self) -> str:
        """The format's TITLE: one translated template for every family, the family's name in it."""
        return M_("Hugging Face {family} folder", family=self.label)


def _layer_kinds(cfg: dict[str, Any], family: Family, problems: list) -> list[str] | None:
    n = cfg["num_hidden_layers"]
    window = cfg["sliding_window"]
    types = cfg.get("layer_types")
    if window is not None and type(window) is not int:
        problems.append(M_("{field} must be an integer", field="sliding_window"))
        return None
    if types is not None:
        if not isinstance(types, list) or any(t not in LAYER_TYPES for t in types):
            problems.append(M_("{field} is not supported", field="layer_types"))
            return None
        if set(types) <= {"full_attention"}:  # no local layer, however many it lists (the layer count's limit speaks)
            return None
        if len(types) != n:
            problems.append(M_("{field} is not supported", field="layer_types"))
            return None
        kinds = [LAYER_TYPES[t] for t in types]
    elif cfg.get("use_sliding_window") is False:
        kinds = ["global"] * n
    elif family.pattern is not None:
        kinds = family.pattern(n, cfg)
    else:
        kinds = ["local" if window is not None else "global"] * n
    if "local" in kinds and window is None:
        problems.append(M_("{field} must be an integer", field="sliding_window"))
        return None
    return kinds if "local" in kinds else None


def _rope_fields(cfg: dict[str, Any], family: Family, problems: list) -> None:
    """cfg["_theta"], ["_factor"] and (Gemma 3) ["_local_theta"]: a rope_parameters per layer kind (transformers 5)
    or the older rope_theta / rope_local_base_freq, each checked by hf_common.rope (every scaling refused by name). A
    family whose local layers share the global base (every family but Gemma 3) refuses a local base of its own."""
    params = cfg.get("rope_parameters")
    if isinstance(params, dict) and "full_attention" in params:  # one dict per layer type
        full, local = params.get("full_attention"), params.get("sliding_attention")
        cfg["_theta"], cfg["_factor"] = hf.rope({"rope_parameters": full if isinstance(full, dict) else {}}, problems)
        local_cfg = {"rope_parameters": local if isinstance(local, dict) else {"rope_theta": 10000.0}}
        cfg["_local_theta"] = hf.rope(local_cfg, problems)[0]
        if not family.local_base and isinstance(local, dict) and cfg["_local_theta"] != cfg["_theta"]:
            problems.append(M_("{field} is not supported", field="rope_parameters.sliding_attention"))
        return
    cfg["_theta"], cfg["_factor"] = hf.rope(cfg, problems)
    base = cfg.get("rope_local_base_freq", 10000.0)
    if type(base) not in (int, float):
        problems.append(M_("{field} must be a number", field="rope_local_base_freq"))
        base = 10000.0
    cfg["_local_theta"] = float(base)


def _biases(cfg: dict[str, Any], kind: str | None, problems: list) -> tuple[bool, bool | None]:
    """(bias, qkv_bias) of TransformerConfig: Llama's attention_bias puts a bias on every projection (with mlp_bias
    true; on q/k/v/o alone it is refused by name), Qwen2 has them on q, k, v only; other families have none."""
    fields = ("attention_bias", "mlp_bias")
    if kind is None:
        problems.extend(M_("{field} is not supported", field=f) for f in fields if cfg.get(f, False) is not False)
        return False, None
    hf.booleans(cfg, problems, *fields)
    if kind == "qkv":
        return False, True
    if cfg["attention_bias"] is True and cfg.get("mlp_bias") is not True:
        problems.append(M_("{field} is not supported", field="attention_bias without mlp_bias"))
    return cfg["attention_bias"] is True, None


def read_config(src: Source, family: Family) -> dict[str, Any]:
    """config.json over the family's defaults, every field checked (names only in messages) before anything is
    built; what cannot be mapped exactly is refused, named."""
    kind = hf.model_type(src)
    raw = src.json("config.json")
    if kind in family.also_detects or (isinstance(raw, dict) and "vision_config" in raw):
        raise CheckpointError(
            M_("{where}: a model with a vision tower is not supported (only a text model)",
               where=f"{src.name}/config.json")
        )  # fmt: skip
    cfg = one.read_config(src, {**LLAMA_DEFAULTS, **(GEMMA_DEFAULTS if family.gemma else {}), **family.defaults},
                          family.model_types)  # fmt: skip
    where = f"{src.name}/config.json"
    one.ints(cfg, where, "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
             "num_attention_heads", "max_position_embeddings")  # fmt: skip
    if cfg["num_key_value_heads"] is None:
        cfg["num_key_value_heads"] = cfg["num_attention_heads"]
    one.ints(cfg, where, "num_key_value_heads")
    if cfg["head_dim"] is not None:
        one.ints(cfg, where, "head_dim")
    problems: list = []
    cfg["_activation"] = hf.activation(cfg, "hidden_activation" if family.gemma else "hidden_act", problems)
    _rope_fields(cfg, family, problems)
    cfg["_kinds"] = _layer_kinds(cfg, family, problems)
    cfg["_bias"], cfg["_qkv_bias"] = _biases(cfg, family.biases.get(kind), problems)
    hf.booleans(cfg, problems, "tie_word_embeddings")
    for name, allowed in family.refused.items():
        if cfg.get(name, allowed) != allowed:
            problems.append(M_("{field} is not supported", field=name))
    numbers = ("rms_norm_eps",) + (("query_pre_attn_scalar",) if family.gemma else ())
    caps = ("final_logit_softcapping", "attn_logit_softcapping") if family.gemma else ()
    for name in numbers + caps:
        value = cfg.get(name)
        if value is None and name in caps:
            continue
        if type(value) not in (int, float) or not value > 0:
            problems.append(M_("{field} must be a number above 0", field=name))
    hf.refuse(where, problems)
    heads = cfg["num_attention_heads"]
    head_dim = cfg["head_dim"] or (cfg["hidden_size"] // heads if heads > 0 else 0)
    cfg["_head_dim"] = head_dim
    rotated = int(head_dim * cfg["_factor"])
    cfg["_rope_dim"] = None if rotated == head_dim else rotated
    return cfg


def to_config(cfg: dict[str, Any], where, family: Family) -> TransformerConfig:
    """The one Transformer's configuration of a family's folder (limits checked here, before any weights)."""
    gemma, kinds = family.gemma, cfg["_kinds"]
    return one.stack_config(
        where, "decoder-only", cfg["vocab_size"], cfg["num_hidden_layers"], cfg["max_position_embeddings"],
        one.special_ids(cfg, cfg["vocab_size"]), d_model=cfg["hidden_size"], d_ff=cfg["intermediate_size"],
        n_heads=cfg["num_attention_heads"], n_kv_heads=cfg["num_key_value_heads"], head_dim=cfg["_head_dim"],
        positional="rope", pe_base=cfg["_theta"], pe_layout="half", rope_dim=cfg["_rope_dim"],
        tie_generator=cfg["tie_word_embeddings"], activation=cfg["_activation"], ff_gated=True,
        bias=cfg["_bias"], qkv_bias=cfg["_qkv_bias"], layer_norm_eps=float(cfg["rms_norm_eps"]),
        norm="rms_plus_one" if gemma else "rms", scale_embeddings=gemma,  # Gemma: embeddings * sqrt(hidden_size)
        sliding_window=cfg["sliding_window"] if kinds else None, layer_types=kinds,
        local_pe_base=cfg["_local_theta"] if family.local_base and kinds else None,
        attn_softcap=_float(cfg.get("attn_logit_softcapping")) if family.attn_softcap else None,
        final_softcap=_float(cfg.get("final_logit_softcapping")) if gemma else None,
        query_scale=float(cfg["query_pre_attn_scalar"]) if gemma else None,
        qk_norm=family.qk_norm, block_norms=family.block_norms,
        extra={"imported_from": "Hugging Face " + family.model_types[hf_kind(cfg, family)]},
    )  # fmt: skip


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def hf_kind(cfg: Mapping[str, Any], family: Family) -> str:
    kind = cfg.get("model_type")
    return kind if kind in family.model_types else next(iter(family.model_types))


def _rows(start: int, stop: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """Rows start..stop of a fused weight (a view: nothing is copied)."""

    def take(t: torch.Tensor) -> torch.Tensor:
        if t.dim() != 2 or t.size(0) < stop:
            raise CheckpointError(M_("a fused tensor of shape {shape} cannot be split into {parts} equal parts",
                                     shape=tuple(t.shape), parts=2))  # fmt: skip
        return t[start:stop]

    return take


def convert(state: Mapping[str, torch.Tensor], config: TransformerConfig, where, family: Family) -> Converted:
    m = Mapper(state, where)
    m.require("model.embed_tokens.weight")
    m.put("src_embed.weight", "model.embed_tokens.weight")
    if config.tie_generator:
        hf.alias(m, "lm_head.weight", state["model.embed_tokens.weight"], "model.embed_tokens.weight")
    else:
        m.put("generator.weight", "lm_head.weight")
    m.put("decoder.norm.weight", "model.norm.weight")
    q, kv, f = config.attention_width, config.kv_heads * config.d_head, config.d_ff
    bias, qkv_bias = config.bias, config.bias if config.qkv_bias is None else config.qkv_bias
    for i in range(config.n_decoder_layers):
        ours, theirs = f"decoder.layers.{i}", f"model.layers.{i}"
        attn, mlp = f"{theirs}.self_attn", f"{theirs}.mlp"
        if family.fused:  # Phi-3: one qkv_proj (W^Q; W^K; W^V), one gate_up_proj (gate; up)
            for proj, (a, b) in (("q_proj", (0, q)), ("k_proj", (q, q + kv)), ("v_proj", (q + kv, q + 2 * kv))):
                m.put(f"{ours}.self_attn.{proj}.weight", f"{attn}.qkv_proj.weight", _rows(a, b), " (fused)")
            m.put(f"{ours}.ff.linear1.weight", f"{mlp}.gate_up_proj.weight", _rows(0, f), " (fused)")
            m.put(f"{ours}.ff.linear3.weight", f"{mlp}.gate_up_proj.weight", _rows(f, 2 * f), " (fused)")
        else:
            for proj in ("q_proj", "k_proj", "v_proj"):
                m.put_linear(f"{ours}.self_attn.{proj}", f"{attn}.{proj}", bias=qkv_bias)
            m.put_linear(f"{ours}.ff.linear1", f"{mlp}.gate_proj", bias=bias)
            m.put_linear(f"{ours}.ff.linear3", f"{mlp}.up_proj", bias=bias)
        m.put_linear(f"{ours}.self_attn.out_proj", f"{attn}.o_proj", bias=bias)
        m.put_linear(f"{ours}.ff.linear2", f"{mlp}.down_proj", bias=bias)
        if config.qk_norm != "none":
            m.put(f"{ours}.self_attn.q_norm.weight", f"{attn}.q_norm.weight")
            m.put(f"{ours}.self_attn.k_norm.weight", f"{attn}.k_norm.weight")
        norms = {
            "default": {"norm1": "input_layernorm", "norm3": "post_attention_layernorm"},
            "sandwich": {"norm1": "input_layernorm", "post_norm1": "post_attention_layernorm",
                         "norm3": "pre_feedforward_layernorm", "post_norm3": "post_feedforward_layernorm"},
            "output": {"post_norm1": "post_attention_layernorm", "post_norm3": "post_feedforward_layernorm"},
        }[config.block_norms]  # fmt: skip
        for ours_norm, theirs_norm in norms.items():
            m.put(f"{ours}.{ours_norm}.weight", f"{theirs}.{theirs_norm}.weight")
    m.finish()
    return Converted(config, m.out, m.origin)


def protocol(family: Family):
    """NAME, TITLE, MODEL_TYPES, detect, inspect and load of a family's format module."""

    def read(src: Source) -> dict[str, Any]:
        return read_config(src, family)

    def make(cfg: dict[str, Any], where) -> TransformerConfig:
        return to_config(cfg, where, family)

    def detect(src: Source) -> bool:
        kind = hf.model_type(src)
        return kind in family.model_types or kind in family.also_detects

    def inspect(src: Source) -> CheckpointInfo:
        return one.info(src, family.name, family.title, make(read(src), f"{src.name}/config.json"))

    def load(src: Source, options: LoadOptions) -> tuple[Transformer, Tokenizer]:
        return one.load(src, options, family.title, read, make,
                        lambda state, config, where: convert(state, config, where, family), family.name)  # fmt: skip

    return family.name, family.title, family.model_types, detect, inspect, load
