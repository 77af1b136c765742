"""`Phi3ForCausalLM`: `qkv_proj` and `gate_up_proj` read as views into q/k/v and gate/up (nothing copied), partial
rotary factor, a sliding window when the config names one; LongRoPE (the 128k models) is refused by name.

Read by hf_decoder.py; this docstring is the family's row in the docs' table (scripts/docs_families.py)."""

from .hf_decoder import Family, protocol

FAMILY = Family("phi3", "Phi-3", {"phi3": "Phi-3"}, fused=True,
                defaults={"max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "vocab_size": 32064})  # fmt: skip
NAME, TITLE, MODEL_TYPES, detect, inspect, load = protocol(FAMILY)
