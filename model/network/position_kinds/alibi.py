"""ALiBi (Press et al. 2022): -slope_h x distance added to each head's scores, no positional embedding at all."""

from i18n import N_

from ..positional import AlibiPositionalEncoding

NAME = "alibi"
TITLE = N_("ALiBi")
DESCRIPTION = N_("ALiBi positions (a bias on the scores)")
INSIDE_ATTENTION = True
APP = "ui.views.positional_views.alibi"  # its app half: what the positional page says and draws of it
PACK_TEXT = N_(
    "This model adds nothing to its embeddings: each head subtracts slope × |i − j| from its "
    "self-attention scores (ALiBi)."
)


def make(config, bidirectional: bool):
    return AlibiPositionalEncoding(config.d_model, config.max_len, config.n_heads)
