"""`Gemma3ForCausalLM` (`gemma3_text`): Gemma 2's layers with per-head q/k norms, five local layers for one global
(`layer_types` or `sliding_window_pattern`), the local layers' own RoPE base (`rope_local_base_freq` or the
`sliding_attention` `rope_parameters`), no attention soft-capping; a multimodal Gemma 3 (`gemma3`, a vision tower)
is refused by name.

Read by hf_decoder.py; this docstring is the family's row in the docs' table (scripts/docs_families.py)."""

from .hf_decoder import Family, one_in, protocol

FAMILY = Family("gemma3", "Gemma 3 (text)", {"gemma3_text": "Gemma 3"}, gemma=True,
                qk_norm="head", block_norms="sandwich", local_base=True, pattern=one_in, also_detects=("gemma3",),
                refused={"attn_logit_softcapping": None, "use_bidirectional_attention": False},
                defaults={"max_position_embeddings": 131072})  # fmt: skip
NAME, TITLE, MODEL_TYPES, detect, inspect, load = protocol(FAMILY)
