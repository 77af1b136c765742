"""A local Hugging Face Gemma 3 text folder (Gemma3ForCausalLM, model_type gemma3_text): Gemma 2's layers with
per-head q/k norms, five local layers for one global by default, the local layers' own RoPE base, no attention
soft-capping; read by hf_decoder.py. A multimodal Gemma 3 (model_type gemma3, a vision tower) is refused by name."""

from i18n import M_, N_

from .hf_decoder import Family, one_in, protocol

NAME = "gemma3"
TITLE = M_("Hugging Face Gemma 3 (text) folder")
MODEL_TYPES = {"gemma3_text": N_("Gemma 3")}
FAMILY = Family(
    NAME,
    TITLE,
    MODEL_TYPES,
    defaults={
        "sliding_window": 4096,
        "query_pre_attn_scalar": 256,
        "attn_logit_softcapping": None,
        "final_logit_softcapping": None,
        "hidden_activation": "gelu_pytorch_tanh",
        "tie_word_embeddings": True,
        "max_position_embeddings": 131072,
    },
    activation_key="hidden_activation",
    gemma=True,
    qk_norm="head",
    block_norms="sandwich",
    local_base=True,
    pattern=one_in,
    refused={"attn_logit_softcapping": None, "use_bidirectional_attention": False},
    also_detects=("gemma3",),
)
detect, inspect, load = protocol(FAMILY)
