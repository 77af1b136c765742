"""Streamlit entry point: `streamlit run app.py` serves app_script.py (the sidebar, then the page the user chose).

    streamlit run app.py                                  demos and uploads only
    streamlit run app.py -- --allow-folder DIR [--allow-folder DIR2 ...]
                                                          visitors may also open checkpoints inside DIR...
    TRANSFORMER_VIZ_FOLDERS=DIR:DIR2 streamlit run app.py   the same, from the environment

Options after `--` belong to the app (model/checkpoints/serving.py reads them); see docs/serving.md. This file is
the server around the script: Streamlit's own (st.App, which `streamlit run` finds here as `app`) with one
middleware that tells the browser where the app's root is, so that a page opened by its own address makes no
failed requests (ui/serving/base_path.py).
"""

from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from ui.serving.base_path import BasePath

app = st.App(Path(__file__).with_name("app_script.py"), middleware=[Middleware(BasePath)])
