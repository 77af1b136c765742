"""No positional encoding at all (NoPE)."""

from i18n import N_

from ..positional import NoPositionalEncoding

NAME = "none"
TITLE = N_("None")
DESCRIPTION = N_("no positional encoding")
INSIDE_ATTENTION = False
APP = "ui.views.positional_views.none"  # its app half: what the positional page says and draws of it
PACK_TEXT = None


def make(config, bidirectional: bool):
    return NoPositionalEncoding(config.d_model, config.max_len)
