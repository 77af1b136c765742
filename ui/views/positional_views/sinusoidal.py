"""The paper's sinusoids on the positional page (its table views are the page's own)."""

import streamlit as st

from i18n import _
from model.analysis.inspect import positional_tables
from model.analysis.pe_analysis import cosine_similarity


def mine(session, cfg, length: int) -> None:
    st.caption(
        _("This model uses the fixed sinusoidal encoding (d_model {d}, base {base}, {layout} layout).").format(
            d=cfg.d_model, base=f"{cfg.pe_base:g}", layout=cfg.pe_layout
        )
    )


def similarity(model, positions: int):
    """("cos", (P, P)): the cosine similarity of the rows the model adds, for the six kinds' comparison."""
    return "cos", cosine_similarity(positional_tables(model)["source"][:positions])
