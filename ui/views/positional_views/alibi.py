"""ALiBi on the positional page (the view: ui/views/positional_kinds.alibi_view)."""

import streamlit as st

from i18n import N_, _
from model.network import pe_kinds
from ui.views import positional_kinds

# what the "This model & input" view says (nothing is added to the embeddings)
TEXT = N_(
    "This model uses ALiBi: nothing is added to the embeddings (the rows above are zero); each head "
    "subtracts slope × distance from its scores. See the ALiBi view."
)


def mine(session, cfg, length: int) -> None:
    st.caption(_(TEXT))


def view(session, d_model: int, base: float) -> None:
    positional_kinds.alibi_view(session)


def similarity(model, positions: int):
    """("bias", (P, P)): the bias on the scores, head average."""
    return "bias", pe_kinds.alibi_matrix(model.config.n_heads, positions)[1].mean(axis=0)
