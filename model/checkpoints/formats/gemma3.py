"""A local Hugging Face Gemma 3 text folder (Gemma3ForCausalLM, model_type gemma3_text): Gemma 2's layers with
per-head q/k norms, five local layers for one global by default, the local layers' own RoPE base, no attention
soft-capping; read by hf_decoder.py. A multimodal Gemma 3 (model_type gemma3, a vision tower) is refused by name."""

from i18n import M_, N_

from .hf_decoder import Family, one_in, protocol

FAMILY = Family("gemma3", M_("Hugging Face Gemma 3 (text) folder"), {"gemma3_text": N_("Gemma 3")}, gemma=True,
                qk_norm="head", block_norms="sandwich", local_base=True, pattern=one_in, also_detects=("gemma3",),
                refused={"attn_logit_softcapping": None, "use_bidirectional_attention": False},
                defaults={"max_position_embeddings": 131072})  # fmt: skip
NAME, TITLE, MODEL_TYPES, detect, inspect, load = protocol(FAMILY)
