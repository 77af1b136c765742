"""T5's relative bias: a learned scalar per head and bucket of distance, added to the self-attention scores."""

from i18n import N_

from ..positional import RelativePositionBias

NAME = "relative"
TITLE = N_("T5 relative bias")
DESCRIPTION = N_("T5 relative position bias")
INSIDE_ATTENTION = True
APP = "ui.views.positional_views.relative"  # its app half: what the positional page says and draws of it
PACK_TEXT = N_(
    "This model adds nothing to its embeddings: a learned number per head and bucket of distance is "
    "added to its self-attention scores (T5's relative bias)."
)


def make(config, bidirectional: bool):
    return RelativePositionBias(config.d_model, config.max_len, config.n_heads, bidirectional,
                                config.relative_buckets, config.relative_max_distance)  # fmt: skip
