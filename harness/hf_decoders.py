"""Tiny random-weight folders of the Llama-like Hugging Face families (model/checkpoints/formats/hf_decoder.py), built
with transformers' own classes and save_pretrained, with a byte-level tokenizer.json trained here: one builder per
format NAME, the registry the tests read (a format module with a FAMILY and no builder here fails the tests).

Each tiny config is the family's published shape scaled down, keeping what the family changes: a sliding window of 4
tokens (a test text is longer), Gemma 2's soft-capping at values small enough to matter, Gemma 3's local layers' own
RoPE base, Phi-3's partial rotary factor, and grouped-query attention everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from harness.byte_level import byte_level

WINDOW = 4  # the sliding window of every tiny folder that has one: shorter than the test texts
SHAPE = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             max_position_embeddings=64)  # fmt: skip


@dataclass(frozen=True)
class Builder:
    """A family's tiny folder: transformers' model and config classes and the config's fields."""

    model_class: str  # e.g. "MistralForCausalLM"
    config_class: str  # e.g. "MistralConfig"
    fields: dict[str, Any] = field(default_factory=dict)  # over SHAPE
    bos: bool = False  # the tokenizer puts <bos> first (Gemma)
    seed: int = 0


BUILDERS: dict[str, Builder] = {
    # Llama-2-7B: the plain Llama-like layers (grouped-query attention from SHAPE); Qwen2's biases: tests/hf_one_stack
    "llama": Builder("LlamaForCausalLM", "LlamaConfig", {}, seed=7),
    # Mistral-7B: 32 heads, 8 kv heads, head_dim 128, a sliding window of 4096 in every layer
    "mistral": Builder("MistralForCausalLM", "MistralConfig", dict(head_dim=8, sliding_window=WINDOW), seed=1),
    # Gemma-2-2B: local and global layers in turn, soft-capping 50 / 30, query_pre_attn_scalar 256, head_dim 256
    "gemma2": Builder(
        "Gemma2ForCausalLM",
        "Gemma2Config",
        dict(
            num_hidden_layers=3,
            head_dim=8,
            query_pre_attn_scalar=12,
            sliding_window=WINDOW,
            attn_logit_softcapping=3.0,
            final_logit_softcapping=2.0,
        ),
        bos=True,
        seed=2,
    ),  # fmt: skip
    # Gemma-3-1B: 26 layers, five local (base 10000) for one global (base 1e6), q/k norms, window 512
    "gemma3": Builder(
        "Gemma3ForCausalLM",
        "Gemma3TextConfig",
        dict(
            num_hidden_layers=4,
            head_dim=8,
            query_pre_attn_scalar=8,
            sliding_window=WINDOW,
            layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"],
            rope_parameters={
                "full_attention": {"rope_type": "default", "rope_theta": 1e6},
                "sliding_attention": {"rope_type": "default", "rope_theta": 100.0},
            },
            final_logit_softcapping=4.0,
        ),
        bos=True,
        seed=3,
    ),  # fmt: skip
    # Phi-3-mini-4k: fused qkv_proj and gate_up_proj, a sliding window of 2047
    "phi3": Builder(
        "Phi3ForCausalLM",
        "Phi3Config",
        dict(
            sliding_window=WINDOW + 1,
            rope_parameters={"rope_type": "default", "rope_theta": 500.0, "partial_rotary_factor": 0.5},
        ),
        seed=4,
    ),  # fmt: skip
    # OLMo-2-1B: q/k norms over the whole projections, norms on the sublayers' outputs only
    "olmo2": Builder("Olmo2ForCausalLM", "Olmo2Config", {}, seed=5),
    # Qwen3-0.6B: head_dim 128 apart from hidden_size / heads, q/k norms per head
    "qwen3": Builder("Qwen3ForCausalLM", "Qwen3Config", dict(head_dim=12), seed=6),
}


def perturb(model: torch.nn.Module, seed: int) -> None:
    """Noise on every parameter (norm gains included), so that a swapped, skipped or mis-scaled tensor shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.15)


def build(name: str, root: Path, reference: bool = True, **overrides: Any):
    """Write the tiny folder of family `name` under root/name; returns (folder, transformers model read back with
    eager attention, transformers tokenizer of the same tokenizer.json). reference=False: the folder alone is wanted
    (the pages' tests), and the model is not read back: (folder, transformers config, None)."""
    import transformers

    spec = BUILDERS[name]
    folder = root / name
    folder.mkdir(parents=True)
    specials = ["<bos>", "<eos>", "<pad>"]
    tok = byte_level(folder, specials, bos="<bos>" if spec.bos else None)
    ids = {f"{s}_token_id": tok.token_to_id(f"<{s}>") for s in ("bos", "eos", "pad")}
    config = getattr(transformers, spec.config_class)(vocab_size=tok.get_vocab_size(),
                                                      **{**SHAPE, **ids, **spec.fields, **overrides})  # fmt: skip
    cls = getattr(transformers, spec.model_class)
    torch.manual_seed(spec.seed)
    model = cls(config)
    perturb(model, 20 + spec.seed)
    model.save_pretrained(str(folder))
    if not reference:
        return folder, model.config, None
    hf = cls.from_pretrained(str(folder), attn_implementation="eager").eval()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"), eos_token="<eos>")
    return folder, hf, fast


def build_loaded(names, root: Path, reference: bool = True) -> dict[str, tuple]:
    """`build` for each family of `names` under `root`, each folder then loaded by this project:
    {name: (folder, transformers model (or config: reference=False), transformers tokenizer, our model, our
    tokenizer)}."""
    from model.checkpoints.loading import load_checkpoint

    return {name: (*build(name, root, reference), *load_checkpoint(root / name)) for name in names}
