"""`Olmo2ForCausalLM`: q/k RMS norms over the whole projections, a norm only on each sublayer's output (none
before it).

Read by hf_decoder.py; this docstring is the family's row in the docs' table (scripts/docs_families.py)."""

from .hf_decoder import Family, protocol

FAMILY = Family("olmo2", "OLMo 2", {"olmo2": "OLMo 2"}, qk_norm="all",
                block_norms="output", defaults={"rms_norm_eps": 1e-5, "vocab_size": 50304})  # fmt: skip
NAME, TITLE, MODEL_TYPES, detect, inspect, load = protocol(FAMILY)
