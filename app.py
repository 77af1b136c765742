"""Streamlit entry point: the shared sidebar (model and input), then the page the user chose.

    streamlit run app.py
"""

import streamlit as st

# An emoji icon, not ":material/...": Streamlit fetches a material favicon from fonts.gstatic.com, and the
# app must not reach outside (the browser tests block and report every request that leaves the server).
st.set_page_config(page_title="Transformer attention explorer", page_icon="🔍", layout="wide")

from pages.common import run_app  # noqa: E402  (set_page_config must come first)

run_app()
