"""A local Hugging Face Gemma 2 folder (Gemma2ForCausalLM): local and global layers in turn, soft-capped
attention logits and final logits, query_pre_attn_scalar, (1 + w) RMS norms before and after each sublayer,
embeddings scaled by sqrt(hidden_size); read by hf_decoder.py."""

from i18n import M_, N_

from .hf_decoder import Family, every_other, protocol

NAME = "gemma2"
TITLE = M_("Hugging Face Gemma 2 folder")
MODEL_TYPES = {"gemma2": N_("Gemma 2")}
FAMILY = Family(
    NAME,
    TITLE,
    MODEL_TYPES,
    defaults={
        "sliding_window": 4096,
        "query_pre_attn_scalar": 256,
        "attn_logit_softcapping": 50.0,
        "final_logit_softcapping": 30.0,
        "hidden_activation": "gelu_pytorch_tanh",
        "tie_word_embeddings": True,
        "max_position_embeddings": 8192,
    },
    activation_key="hidden_activation",
    gemma=True,
    block_norms="sandwich",
    attn_softcap=True,
    pattern=every_other,
)
detect, inspect, load = protocol(FAMILY)
