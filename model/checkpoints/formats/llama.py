"""A local Hugging Face Llama or Qwen2 folder (LlamaForCausalLM / Qwen2ForCausalLM): the Llama-like layers as
hf_decoder.py maps them, with Llama's attention_bias (on every projection, with mlp_bias) or Qwen2's q/k/v biases.
A sliding window (Qwen2's use_sliding_window) is refused by name."""

from i18n import M_, N_

from .hf_decoder import Family, protocol

FAMILY = Family("llama", M_("Hugging Face Llama / Qwen2 folder"), {"llama": N_("Llama"), "qwen2": N_("Qwen2")},
                biases={"llama": "config", "qwen2": "qkv"}, refused={"use_sliding_window": False})  # fmt: skip
NAME, TITLE, MODEL_TYPES, detect, inspect, load = protocol(FAMILY)
