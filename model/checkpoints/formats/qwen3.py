"""A local Hugging Face Qwen3 folder (Qwen3ForCausalLM): Qwen2 without q/k/v biases and with per-head q/k RMS
norms; read by hf_decoder.py."""

from i18n import M_, N_

from .hf_decoder import Family, protocol

NAME = "qwen3"
TITLE = M_("Hugging Face Qwen3 folder")
MODEL_TYPES = {"qwen3": N_("Qwen3")}
FAMILY = Family(NAME, TITLE, MODEL_TYPES, defaults={"head_dim": 128}, qk_norm="head")
detect, inspect, load = protocol(FAMILY)
