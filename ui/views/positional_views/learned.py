"""A learned positional table on the positional page: the model's own table."""

from i18n import N_, _
from model.analysis.inspect import positional_tables
from model.analysis.pe_analysis import cosine_similarity
from ui.shell.presentation import show
from ui.shell.shapes import say
from viz import positional_figs as figs

SIDES = {  # an encoder-decoder's two tables: the first one drawn names its side
    "source": N_("This model's learned positional table (source side)"),
    "target": N_("This model's learned positional table (decoder side)"),
}
ONE_TABLE = N_("This model's learned positional table ({sequence})")  # a one-sequence model's, in its shape's words


def mine(session, cfg, length: int) -> None:
    side, table = next(iter(positional_tables(session.model).items()))  # the source's, or a decoder's
    title = _(SIDES[side]) if cfg.has_encoder and cfg.has_decoder else say(ONE_TABLE, cfg)
    show(figs.pe_matrix(table[:length], title), key="pe_learned")


def similarity(model, positions: int):
    """("cos", (P, P)): the cosine similarity of the learned rows, for the six kinds' comparison."""
    return "cos", cosine_similarity(positional_tables(model)["source"][:positions])
