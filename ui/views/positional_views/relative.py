"""T5's relative bias on the positional page (the view: ui/views/positional_kinds.relative_view, beside the shipped demo's
learned table)."""

import numpy as np
import streamlit as st

from i18n import N_, _
from model.network import pe_kinds
from ui.shell import model_picker
from ui.views import positional_kinds, positional_models

# what the "This model & input" view says (nothing is added to the embeddings)
TEXT = N_(
    "This model uses T5's relative bias: nothing is added to the embeddings (the rows above are zero); "
    "a learned number per head and distance bucket is added to the scores. See the T5 relative bias "
    "view."
)


def mine(session, cfg, length: int) -> None:
    st.caption(_(TEXT))


def view(session, d_model: int, base: float) -> None:
    demo = positional_models.reverse_models().get("relative")
    shipped = model_picker.load(str(demo.path), model_picker.stamp(demo.path), None, ())[0] if demo else None
    positional_kinds.relative_view(session, shipped)


def similarity(model, positions: int):
    """("bias", (P, P)): the learned bias on the encoder's scores, head average."""
    rel, values = pe_kinds.relative_bias_curves(model, positions)["source"]
    offsets = np.subtract.outer(np.arange(positions), np.arange(positions))  # i - j; rel runs -P..P for key - query
    return "bias", values.mean(axis=0)[positions - offsets]
