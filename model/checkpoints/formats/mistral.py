"""A local Hugging Face Mistral folder (MistralForCausalLM): Llama's layers with a sliding window in every
layer (sliding_window; null: none), read by hf_decoder.py."""

from i18n import M_, N_

from .hf_decoder import Family, protocol

FAMILY = Family("mistral", M_("Hugging Face Mistral folder"), {"mistral": N_("Mistral")},
                defaults={"sliding_window": 4096, "head_dim": None, "max_position_embeddings": 131072})  # fmt: skip
NAME, TITLE, MODEL_TYPES, detect, inspect, load = protocol(FAMILY)
