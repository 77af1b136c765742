"""The paper's fixed sinusoids, added to the embeddings: PE[p, 2i] = sin(p / base^(2i/d)), PE[p, 2i+1] = cos(...)."""

from i18n import N_

from ..positional import SinusoidalPositionalEncoding

NAME = "sinusoidal"
TITLE = N_("Sinusoidal (fixed)")
DESCRIPTION = N_("sinusoidal positions")
INSIDE_ATTENTION = False
APP = "ui.views.positional_views.sinusoidal"  # its app half: what the positional page says and draws of it
PACK_TEXT = None


def make(config, bidirectional: bool):
    return SinusoidalPositionalEncoding(config.d_model, config.max_len, config.pe_base, config.pe_layout)
