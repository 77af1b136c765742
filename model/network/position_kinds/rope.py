"""Rotary positions (Su et al. 2021): q and k of each head rotated by their positions, nothing added to embeddings."""

from i18n import N_

from ..positional import RotaryPositionalEncoding

NAME = "rope"
TITLE = N_("RoPE")
DESCRIPTION = N_("rotary positions (RoPE)")
INSIDE_ATTENTION = True
APP = "ui.views.positional_views.rope"  # its app half: what the positional page says and draws of it
PACK_TEXT = N_(
    "This model adds nothing to its embeddings: its queries and keys are rotated by their positions in "
    "every self-attention layer (RoPE), so attention sees the distance i − j."
)


def make(config, bidirectional: bool):
    rope = RotaryPositionalEncoding(config.d_model, config.max_len, config.n_heads, config.pe_base, config.pe_layout)
    rope.d_head = config.rope_dim or config.d_head  # head_dim set apart; partial RoPE: the rotated dims
    rope.local_base = config.local_pe_base  # the local layers' own base (Gemma 3), or None
    return rope
