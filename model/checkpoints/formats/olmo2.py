"""A local Hugging Face OLMo 2 folder (Olmo2ForCausalLM): q/k RMS norms over the whole projections, and a
norm only on each sublayer's output (none before it); read by hf_decoder.py."""

from i18n import M_, N_

from .hf_decoder import Family, protocol

FAMILY = Family("olmo2", M_("Hugging Face OLMo 2 folder"), {"olmo2": N_("OLMo 2")}, qk_norm="all",
                block_norms="output", defaults={"rms_norm_eps": 1e-5, "vocab_size": 50304})  # fmt: skip
NAME, TITLE, MODEL_TYPES, detect, inspect, load = protocol(FAMILY)
