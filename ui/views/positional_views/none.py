"""No positional encoding, on the positional page."""

import numpy as np
import streamlit as st

from i18n import _


def mine(session, cfg, length: int) -> None:
    st.caption(
        _("This model adds no positional encoding: the embeddings alone, so attention cannot tell where a token is.")
    )


def similarity(model, positions: int):
    """("cos", (P, P)): nothing is added, so every position looks the same."""
    return "cos", np.ones((positions, positions))
