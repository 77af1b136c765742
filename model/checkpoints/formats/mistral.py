"""`MistralForCausalLM`: Llama's layers with a sliding window in every layer (`sliding_window`; null: none).

Read by hf_decoder.py; this docstring is the family's row in the docs' table (scripts/docs_families.py)."""

from .hf_decoder import Family, protocol

FAMILY = Family("mistral", "Mistral", {"mistral": "Mistral"},
                defaults={"sliding_window": 4096, "head_dim": None, "max_position_embeddings": 131072})  # fmt: skip
NAME, TITLE, MODEL_TYPES, detect, inspect, load = protocol(FAMILY)
