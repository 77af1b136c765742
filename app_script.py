"""The script Streamlit runs for every page run: the shared sidebar (model and input), then the page the user chose.

`streamlit run app.py` serves it (app.py: the server around it); see app.py for the command lines.
"""

import streamlit as st

from i18n import N_

# An emoji icon, not ":material/...": Streamlit fetches a material favicon from fonts.gstatic.com, and the
# app must not reach outside (the browser tests block and report every request that leaves the server).
st.set_page_config(page_title=N_("Transformer attention explorer"), page_icon="🔍", layout="wide")  # run_app translates

from ui.shell.run_app import run_app  # noqa: E402  (set_page_config must come first)

run_app()
