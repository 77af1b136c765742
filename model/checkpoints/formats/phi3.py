"""A local Hugging Face Phi-3 folder (Phi3ForCausalLM): Llama's layers with fused projections (qkv_proj,
gate_up_proj, read as views into q/k/v and gate/up), a sliding window when the config names one; read by
hf_decoder.py. LongRoPE (the 128k models) is refused by name."""

from i18n import M_, N_

from .hf_decoder import Family, protocol

FAMILY = Family("phi3", M_("Hugging Face Phi-3 folder"), {"phi3": N_("Phi-3")}, fused=True,
                defaults={"max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "vocab_size": 32064})  # fmt: skip
NAME, TITLE, MODEL_TYPES, detect, inspect, load = protocol(FAMILY)
