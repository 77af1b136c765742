"""Rotary positions on the positional page (the view: ui/views/positional_kinds.rope_view) and on the Inside page."""

import numpy as np
import streamlit as st

from i18n import N_, _
from model.network import pe_kinds
from ui.views import positional_kinds

INSIDE_NOTE = N_("RoPE: q and the keys above are already turned by their positions, so q·k_j depends on i − j.")


# what the "This model & input" view says (nothing is added to the embeddings)
TEXT = N_(
    "This model uses rotary positions (RoPE): nothing is added to the embeddings (the rows above are zero); "
    "queries and keys are turned by their position in every self-attention layer. See the RoPE view."
)


def mine(session, cfg, length: int) -> None:
    st.caption(_(TEXT))


def view(session, d_model: int, base: float) -> None:
    positional_kinds.rope_view(session, d_model, base)


def similarity(model, positions: int):
    """("cos", (P, P)): the cosine of one vector turned to each position (it depends on the distance only)."""
    cfg = model.config
    same = pe_kinds.rope_decay(cfg.d_head, positions, cfg.pe_base)[1]
    return "cos", same[np.abs(np.subtract.outer(np.arange(positions), np.arange(positions)))]
