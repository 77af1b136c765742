"""`Qwen3ForCausalLM`: Qwen2 without q/k/v biases, with per-head q/k RMS norms, `head_dim` set apart.

Read by hf_decoder.py; this docstring is the family's row in the docs' table (scripts/docs_families.py)."""

from .hf_decoder import Family, protocol

FAMILY = Family("qwen3", "Qwen3", {"qwen3": "Qwen3"}, defaults={"head_dim": 128},
                qk_norm="head")  # fmt: skip
NAME, TITLE, MODEL_TYPES, detect, inspect, load = protocol(FAMILY)
