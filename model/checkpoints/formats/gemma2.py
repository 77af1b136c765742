"""`Gemma2ForCausalLM`: local and global layers in turn, soft-capped attention logits and final logits,
`query_pre_attn_scalar`, (1 + w) RMS norms before and after each sublayer, embeddings × √hidden_size, GELU-tanh gated
feed-forward, tied output layer.

Read by hf_decoder.py; this docstring is the family's row in the docs' table (scripts/docs_families.py)."""

from .hf_decoder import Family, every_other, protocol

FAMILY = Family("gemma2", "Gemma 2", {"gemma2": "Gemma 2"}, gemma=True,
                block_norms="sandwich", attn_softcap=True, pattern=every_other,
                defaults={"attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
                          "max_position_embeddings": 8192})  # fmt: skip
NAME, TITLE, MODEL_TYPES, detect, inspect, load = protocol(FAMILY)
