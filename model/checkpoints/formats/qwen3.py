"""A local Hugging Face Qwen3 folder (Qwen3ForCausalLM): Qwen2 without q/k/v biases and with per-head q/k RMS
norms; read by hf_decoder.py."""

from i18n import M_, N_

from .hf_decoder import Family, protocol

FAMILY = Family("qwen3", M_("Hugging Face Qwen3 folder"), {"qwen3": N_("Qwen3")}, defaults={"head_dim": 128},
                qk_norm="head")  # fmt: skip
NAME, TITLE, MODEL_TYPES, detect, inspect, load = protocol(FAMILY)
