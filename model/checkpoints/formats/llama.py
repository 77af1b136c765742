"""`LlamaForCausalLM` (with and without GQA), `Qwen2ForCausalLM` (q/k/v biases, tied or own `lm_head`): RMSNorm,
SwiGLU, RoPE with `rope_theta` (`rope_parameters` of transformers 5 or the older top-level field); Llama's
`attention_bias` on every projection (with `mlp_bias`) or Qwen2's q/k/v biases. A sliding window (Qwen2's
`use_sliding_window`) is refused by name.

Read by hf_decoder.py; this docstring is the family's row in the docs' table (scripts/docs_families.py)."""

from .hf_decoder import Family, protocol

FAMILY = Family("llama", "Llama / Qwen2", {"llama": "Llama", "qwen2": "Qwen2"},
                biases={"llama": "config", "qwen2": "qkv"}, refused={"use_sliding_window": False})  # fmt: skip
NAME, TITLE, MODEL_TYPES, detect, inspect, load = protocol(FAMILY)
