"""What the Hugging Face folder formats (T5, BART, mBART) share: config.json with the family's defaults,
generation_config.json's decoding tokens, the weights file, tied tensors, and the inspection record.

Values from config.json are file contents: messages name fields, never echo values (strings) from the file.
Numbers are checked by TransformerConfig's limits (make_config) before any tensor is read or built.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch

from i18n import M_, N_, join_messages

from ...env import keep_bf16, parameter_limit
from ...network.config import TransformerConfig, parameter_count
from ..checkpoint import CheckpointError
from .common import Mapper, check_heads, one_end_token, refuse  # noqa: F401 (hf.check_heads, hf.refuse)
from .common import where as place
from .marian import read_marian_weights
from .source import CheckpointInfo, Source, Weights, precision_note

# Hugging Face activation names -> this project's (gelu_new / gelu_pytorch_tanh: the tanh approximation)
ACTIVATIONS = {
    "relu": "relu",
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "swish": "silu",
    "silu": "silu",
}


def model_type(src: Source) -> str | None:
    data = src.json("config.json") if src.is_dir else None
    value = data.get("model_type") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def config_json(src: Source, defaults: Mapping[str, Any], generation_keys: tuple[str, ...]) -> dict[str, Any]:
    """config.json (a JSON object) over the family's defaults, then generation_config.json's `generation_keys`."""
    raw = src.json("config.json")
    if not isinstance(raw, dict):
        raise CheckpointError(M_("{name}/config.json must hold a JSON object", name=src.name))
    cfg = {**defaults, **raw}
    generation = src.json("generation_config.json")
    if isinstance(generation, dict):
        cfg.update((key, generation[key]) for key in generation_keys if key in generation)
    return cfg


def read_config(src: Source, defaults: Mapping[str, Any], family: str) -> dict[str, Any]:
    """config.json over the family's defaults, then generation_config.json's decoding tokens over both."""
    keys = ("decoder_start_token_id", "forced_bos_token_id", "eos_token_id", "pad_token_id", "bos_token_id")
    cfg = config_json(src, defaults, keys)
    where = f"{src.name}/config.json"
    if cfg.get("is_encoder_decoder") is False:
        raise CheckpointError(
            M_("{where}: a decoder-only {family} model; this app shows encoder-decoders", where=where, family=family)
        )
    one_end_token(cfg, where)
    if cfg.get("decoder_start_token_id") is None:  # as generate() falls back
        cfg["decoder_start_token_id"] = cfg.get("bos_token_id")
    for key in ("pad_token_id", "eos_token_id", "decoder_start_token_id"):
        if type(cfg.get(key)) is not int:
            raise CheckpointError(M_("{where}: {field} must be an integer", where=where, field=key))
    if cfg.get("forced_bos_token_id") is not None and type(cfg["forced_bos_token_id"]) is not int:
        raise CheckpointError(M_("{where}: {field} must be an integer", where=where, field="forced_bos_token_id"))
    return cfg


def booleans(cfg: Mapping[str, Any], problems: list, *keys: str) -> None:
    """A problem for each of `keys` whose value is not true or false (a missing key reads as false)."""
    problems.extend(
        M_("{field} must be true or false", field=k) for k in keys if not isinstance(cfg.get(k, False), bool)
    )


def activation(cfg: dict[str, Any], key: str, problems: list) -> str:
    name = cfg.get(key)
    if not isinstance(name, str) or name not in ACTIVATIONS:
        problems.append(M_("{field} is not one of {allowed}", field=key, allowed=", ".join(ACTIVATIONS)))
        return "relu"
    return ACTIVATIONS[name]


def weights(src: Source, title: str, config: TransformerConfig | None = None) -> Weights:
    """model.safetensors (or shards), else pytorch_model.bin with weights_only; a half-precision safetensors file is
    read as float32 (these families store no positional table whose check needs the stored precision), unless the
    operator keeps bfloat16 ($VIZ_KEEP_BF16=1) and every floating tensor is stored so: then read as stored, and
    Weights.kept says so. title: the format, named in the error when the folder has no weights. config: counted
    against the memory for weights in the type they will be kept in, before anything is read."""
    keep = keep_bf16() and read_marian_weights(Source(src.path, mmap=True), title=title).precision == "bfloat16"
    if config is not None:
        check_weight_memory(src.name, title, config, torch.bfloat16 if keep else torch.float32)
    read = read_marian_weights(src, widen=not keep, title=title)
    return dataclasses.replace(read, kept=torch.bfloat16) if keep else read


def check_weight_memory(name: str, title: str, config: TransformerConfig, dtype: torch.dtype) -> None:
    """CheckpointError when the model's numbers, in the float type its weights are kept in, pass the memory this
    server gives weights (the config's own check counts the narrowest type the server keeps)."""
    limit = parameter_limit(torch.empty((), dtype=dtype).element_size())
    if (n := parameter_count(config)) > limit:
        problem = M_(TOO_MANY_NUMBERS, n=f"{n / 1e6:,.0f}", limit=f"{limit / 1e6:,.0f}")
        raise CheckpointError(M_("{where}: {problem}", where=place(name, title), problem=problem))


TOO_MANY_NUMBERS = N_(
    "the model would hold {n} million numbers, more than this server's memory for weights holds: {limit} million"
)


def alias(m: Mapper, key: str, same_as: torch.Tensor, what: str) -> None:
    """An optional stored copy of a tied tensor: used only to check that it really is the same."""
    if key in m.state:
        m.take(key)
        if m.state[key].shape != same_as.shape or not torch.equal(m.state[key], same_as):
            raise CheckpointError(
                M_("{where}: {key} differs from {what}, although they are tied", where=m.where, key=key, what=what)
            )


def untied_head(state: Mapping[str, torch.Tensor], embeddings: str) -> bool:
    """lm_head.weight is stored and differs from the embeddings: an output layer of its own (as transformers
    decides when both are in the file). Without it, or equal to them, the output layer is the embeddings."""
    head, emb = state.get("lm_head.weight"), state.get(embeddings)
    if head is None or emb is None:
        return False
    return head.shape != emb.shape or not torch.equal(head, emb)


def with_tied_head(config: TransformerConfig, state: Mapping[str, torch.Tensor], embeddings: str) -> TransformerConfig:
    return dataclasses.replace(config, tie_generator=not untied_head(state, embeddings))


def info(src: Source, name: str, title: str, config: TransformerConfig, tokenizer_note: str) -> CheckpointInfo:
    precision = weights(src, title).precision  # memory-mapped: the tensors' dtypes, not their bytes
    return CheckpointInfo(
        str(src.path),
        name,
        title,
        False,
        False,
        config.d_model,
        config.src_vocab_size,
        config.tgt_vocab_size,
        n_heads=config.n_heads,
        notes=join_messages(" ", filter(None, (tokenizer_note, precision_note(precision)))),
        precision=precision,
    )


# RoPE: what transformers reads (PreTrainedConfig.convert_rope_params_to_dict, standardize_rope_params): a truthy
# `rope_scaling` replaces `rope_parameters`; the kind is its "rope_type", else its older spelling "type", else
# "default"; per-layer-type dicts (a dict of such dicts) each hold one. Only "default" with no other key than these
# is the plain rotation this app computes: every scaling (linear, dynamic, YaRN, LongRoPE, Llama 3's, ...) changes
# the angles beyond what rope_theta says, and a default carrying scaling keys says something transformers ignores.
ROPE_PLAIN_KEYS = {"rope_type", "type", "rope_theta", "partial_rotary_factor"}
ROPE_SCALINGS = ("linear", "dynamic", "yarn", "longrope", "llama3", "proportional", "su", "ntk")  # named in messages
ROPE_SCALING_REFUSED = N_(
    "{field} asks for the RoPE scaling “{scaling}”, which this app does not compute (only the plain rotation); "
    "the model would compute something other than what transformers computes"
)
ROPE_KEYS_REFUSED = N_(
    "{field} names the plain RoPE (default) but carries the scaling keys {keys}; this app does not read such a "
    "configuration as transformers might"
)


def _rope_dicts(params: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(suffix, dict) of one global dict of RoPE parameters, or of each per-layer-type dict in a nested one."""
    nested = [(f".{k}", v) for k, v in params.items() if isinstance(v, Mapping)]
    return nested if nested and len(nested) == len(params) else [("", params)]


def rope(cfg: Mapping[str, Any], problems: list) -> tuple[float, float]:
    """(rope_theta, partial_rotary_factor) of a Llama-like config.json, read as transformers reads it; a scaling of
    any kind, in any spelling, is appended to `problems` by name (every Llama-like family calls this)."""
    scaling, params = cfg.get("rope_scaling"), cfg.get("rope_parameters")
    field = "rope_scaling" if scaling else "rope_parameters"
    chosen = scaling if scaling else params
    if chosen is None or chosen == {}:
        chosen = {}
    elif not isinstance(chosen, Mapping):
        problems.append(M_("{field} must be a JSON object", field=field))
        chosen = {}
    for suffix, one in _rope_dicts(chosen):
        kind = one.get("rope_type", one.get("type", "default"))
        if kind != "default":
            shown = kind if kind in ROPE_SCALINGS else "?"
            problems.append(M_(ROPE_SCALING_REFUSED, field=field + suffix, scaling=shown))
        elif extra := sorted(k for k in one if k not in ROPE_PLAIN_KEYS):
            shown = ", ".join(k if k.isidentifier() and len(k) <= 40 else "?" for k in extra[:6])
            problems.append(M_(ROPE_KEYS_REFUSED, field=field + suffix, keys=shown))
    first = _rope_dicts(chosen)[0][1] if chosen else {}
    theta = first.get("rope_theta", cfg.get("rope_theta", 10000.0))
    factor = first.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0))
    for name, value in (("rope_theta", theta), ("partial_rotary_factor", factor)):
        if type(value) not in (int, float):
            problems.append(M_("{field} must be a number", field=name))
    ok = type(theta) in (int, float) and type(factor) in (int, float)
    return (float(theta), float(factor)) if ok else (10000.0, 1.0)
