"""A learned positional table on the positional page: the model's own table."""

from i18n import _
from model.analysis.inspect import positional_tables
from model.analysis.pe_analysis import cosine_similarity
from ui.shell.presentation import show
from viz import positional_figs as figs


def mine(session, cfg, length: int) -> None:
    side, table = next(iter(positional_tables(session.model).items()))  # the source's, or a decoder's
    title = _("This model's learned positional table (source side)") if side == "source" else None
    title = title or _("This model's learned positional table (decoder side)")
    show(figs.pe_matrix(table[:length], title), key="pe_learned")


def similarity(model, positions: int):
    """("cos", (P, P)): the cosine similarity of the learned rows, for the six kinds' comparison."""
    return "cos", cosine_similarity(positional_tables(model)["source"][:positions])
