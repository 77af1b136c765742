"""A local Hugging Face Mistral folder (MistralForCausalLM): Llama's layers with a sliding window in every
layer (sliding_window; null: none), read by hf_decoder.py."""

from i18n import M_, N_

from .hf_decoder import Family, protocol

NAME = "mistral"
TITLE = M_("Hugging Face Mistral folder")
MODEL_TYPES = {"mistral": N_("Mistral")}
FAMILY = Family(
    NAME,
    TITLE,
    MODEL_TYPES,
    defaults={"sliding_window": 4096, "head_dim": None, "max_position_embeddings": 131072},
)
detect, inspect, load = protocol(FAMILY)
