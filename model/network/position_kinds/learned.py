"""A learned table of positions, added to the embeddings (GPT-2, BERT, BART)."""

from i18n import N_

from ..positional import LearnedPositionalEncoding

NAME = "learned"
TITLE = N_("Learned")
DESCRIPTION = N_("learned positions")
INSIDE_ATTENTION = False
APP = "ui.views.positional_views.learned"  # its app half: what the positional page says and draws of it
PACK_TEXT = None


def make(config, bidirectional: bool):
    return LearnedPositionalEncoding(config.d_model, config.max_len)
