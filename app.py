"""Streamlit entry point: the shared sidebar (model and input), then the page the user chose.

    streamlit run app.py
"""

import streamlit as st

st.set_page_config(page_title="Transformer attention explorer", page_icon=":material/visibility:", layout="wide")

from pages.common import run_app  # noqa: E402  (set_page_config must come first)

run_app()
