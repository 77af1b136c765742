"""Positional encoding page: the sinusoidal table, why it encodes relative position, and the loaded model's PE."""

import numpy as np
import streamlit as st

from i18n import N_, _
from model.analysis import pe_analysis as pea
from model.interventions import NONE
from model.network.position_kinds.registry import kind
from ui.serving import caches
from ui.shell.explain import explain
from ui.shell.figure_download import download_row
from ui.shell.navigation import view_menu
from ui.shell.presentation import chart_box, show
from ui.shell.session import current, show_input_messages
from ui.shell.url_state import Key, Keys, finite
from ui.views import positional_interventions as changed_positions
from ui.views import positional_models, positional_views
from viz import positional_figs as figs

st.title(_("Positional encoding"))
st.caption(
    _("Added to every token embedding (dimensions 2i, 2i+1 share ωᵢ); RoPE, ALiBi and T5's bias act inside attention.")
)
FORMULA = (
    r"PE_{(p,\,2i)}=\sin(p\,\omega_i),\quad PE_{(p,\,2i+1)}=\cos(p\,\omega_i),\quad"
    r"\omega_i=\mathrm{base}^{-2i/d_{\mathrm{model}}}"
)
session = current()
model_d = session.model.config.d_model if session else 64
# One view at a time (st.tabs would build all six on every run); the choice is in the URL.
VIEWS = {
    "matrix": N_("PE matrix"),
    "curves": N_("Sinusoids"),
    "offsets": N_("Dot product vs offset"),
    "similarity": N_("Similarity"),
    "shift": N_("Shift is a rotation"),
    "mine": N_("This model & input"),
    "infer": N_("Positions at inference"),
    **{name: kind(name).TITLE for name in positional_views.VIEWS},  # the kinds' own views (RoPE, ALiBi, T5's bias)
    "models": N_("Six kinds side by side"),
    "length": N_("Length experiment"),
}
# Where each view's first chart starts in presentation mode at 1366x768 (measured, a little to spare): it fits below.
TOP_PX = {"matrix": 290, "curves": 390, "offsets": 430, "similarity": 290, "shift": 430, "mine": 200}
TABLE_VIEWS = ("matrix", "curves", "offsets", "similarity", "shift")  # the views that d_model, length and base change
URL = Keys(
    Key("pe_view", "matrix", choices=tuple(VIEWS)),
    Key("pe_d", cast=int),  # default: the model's d_model, among the choices
    Key("pe_len", 100, cast=lambda raw: min(max(int(raw), 2), 1024)),  # a length past the slider's ends: its end
    Key("pe_base", 10000.0, cast=float, ok=finite(2.0, 1e9), encode=lambda b: f"{b:g}"),
    Key("pe_dims", cast=int, many=True),  # default and choices: from d_model
    Key("pe_starts", cast=int, many=True),  # default and choices: from the length
    Key("pe_k", cast=int),  # default and choices: from the length
)
view = URL.read("pe_view")
changes = NONE
view_menu(VIEWS, "pe_view")
URL.write(pe_view=view)

D_CHOICES = sorted({16, 32, 64, 128, 256, 512, 1024, model_d})
URL.read("pe_d", model_d, D_CHOICES)
URL.read("pe_len", choices=range(2, 1025))
URL.read("pe_base")
if view in TABLE_VIEWS:  # shown only where they change something (kept in the link on the other views)
    c1, c2, c3 = st.columns(3)
    c1.select_slider(_("d_model (dimensions)"), D_CHOICES, key="pe_d")
    c2.slider(_("Length (positions)"), 2, 1024, key="pe_len")
    c3.number_input(_("Base"), min_value=2.0, max_value=1e9, step=1000.0, key="pe_base", format="%g")
d_model, length, base = st.session_state["pe_d"], st.session_state["pe_len"], st.session_state["pe_base"]
URL.write(pe_d=d_model, pe_len=length, pe_base=base)

pe = pea.pe_table(length, d_model, base)
lam = pea.pe_wavelengths(d_model, base)
if view == "matrix":
    show(
        figs.pe_matrix(
            pe,
            _("PE matrix: {length} positions × {d} dimensions, base {base}").format(
                length=length, d=d_model, base=f"{base:g}"
            ),
            max_height=chart_box()[0] - 40,
        ),
        key="pe_matrix",
        top_px=TOP_PX[view],
    )
    st.caption(
        _(
            "Left columns oscillate fast (short wavelengths), right columns slowly: every position gets a unique pattern."
        )
    )
    explain("pe_formula")
elif view == "curves":
    default_dims = sorted({d for d in (0, 1, 4, d_model // 4, d_model // 2) if d < d_model})
    dims = URL.read("pe_dims", default_dims, range(d_model))
    st.multiselect(_("Dimensions (2i: sin, 2i+1: cos)"), list(range(d_model)), key="pe_dims")
    URL.write(pe_dims=dims)
    if dims:
        show(figs.sinusoid_curves(pe, dims, lam), key="pe_curves", top_px=TOP_PX[view])
        explain("pe_formula")
    else:
        st.info(_("Pick at least one dimension."))
elif view == "offsets":
    max_offset = min(length - 1, 60)
    starts = [p for p in (0, 10, 25, 40) if p + max_offset < length] or [0]
    positions = URL.read("pe_starts", starts, range(max(1, length - max_offset)))
    st.multiselect(_("Starting positions p"), list(range(max(1, length - max_offset))), key="pe_starts")
    URL.write(pe_starts=positions)
    if positions:
        dots = pea.offset_dot_products(pe, positions, max_offset)
        spread = float(np.nanmax(np.nanstd(dots, axis=0))) if len(positions) > 1 else 0.0
        st.caption(
            _(
                "The curves coincide: across the chosen p, the dot product at each offset varies by at most "
                "{spread} (float rounding). It depends on k only: Σᵢ cos(k·ωᵢ)."
            ).format(spread=f"{spread:.1e}")
        )  # above the chart: in view
        show(figs.offset_curves(dots, positions), key="pe_offsets", top_px=TOP_PX[view])
        explain("pe_dot")
    else:
        st.info(_("Pick at least one starting position."))
elif view == "similarity":
    shown = min(length, 200)
    show(figs.similarity_matrix(pea.similarity(pe[:shown])), key="pe_similarity", top_px=TOP_PX[view])
    if shown < length:
        st.caption(_("First {n} positions shown.").format(n=shown))
elif view == "shift":
    k_max = min(length - 1, 100)
    if k_max > 1:
        k = URL.read("pe_k", min(5, k_max), range(1, k_max + 1))
        st.slider(_("Offset k"), 1, k_max, key="pe_k")
        URL.write(pe_k=k)
    else:  # a slider needs two values to choose from
        k = 1
        st.caption(_("With 2 positions the only offset is k = 1."))
    check = pea.shift_check(length, d_model, base, k)
    st.caption(
        _("max |M_k·PE(p) − PE(p+k)| over {n} positions: {error}").format(
            n=check.positions_checked, error=f"{check.max_error:.1e}"
        )
    )
    show(figs.rotation_matrix(check.matrix, k), key="pe_rotation", top_px=TOP_PX[view])
    st.markdown(
        _(
            "One fixed matrix M_k (block-diagonal 2×2 rotations by k·ωᵢ) maps **every** position to the one k "
            "steps later, so a linear layer can read relative position."
        )
    )
    explain("pe_rotation")
elif view == "infer":  # positions off, shuffled or shifted while the model runs
    changes = changed_positions.inference_view(session)
elif view == "models":  # the reverse models that differ only in their positions
    positional_models.models_view()
elif view == "length":  # exact match against input length, one curve per positional kind
    positional_models.length_view()
elif view in positional_views.VIEWS:  # today's positions, each kind's own view (ui/views/positional_views/)
    positional_views.VIEWS[view].view(session, d_model, base)
else:
    if session is None:
        st.info(_("Load a model in the sidebar to compare its embeddings with the PE."))
    elif session.ok:  # what is wrong with the input, if anything, is named below
        cap = caches.session_capture(session)
        for side, tokens, emb, rows in (
            ("source", cap.source_tokens, cap.source_embeddings, cap.source_pe),
            ("target", cap.target_tokens, cap.target_embeddings, cap.target_pe),
        ):
            if not tokens:  # the side a decoder-only or encoder-only model does not have
                continue
            other = cap.target_tokens if side == "source" else cap.source_tokens
            show(
                figs.embedding_vs_pe(tokens, pea.row_norms(emb), pea.row_norms(rows), figs.side_name(side, other)),
                key=f"pe_norms_{side}",
                top_px=TOP_PX[view],
            )
        cfg = session.model.config
        positional_views.of(cfg.positional).mine(session, cfg, length)  # what this model's kind says of itself

if view in TABLE_VIEWS:
    st.latex(FORMULA)
if session is not None and show_input_messages(session):  # names what is wrong with the input
    caches.capture_downloads(session, "pe", changes)  # made only when pressed; the positional change recorded
table_npz, table_json = caches.pe_downloads(length, d_model, base)
download_row(
    (_("Download this PE table (.npz)"), table_npz, f"pe_{length}x{d_model}.npz", "pe_table_npz"),
    (_("Download this PE table (.json)"), table_json, f"pe_{length}x{d_model}.json", "pe_table_json"),
)
